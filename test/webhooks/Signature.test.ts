import { describe, expect, it } from "@effect/vitest"
import { hubSignature, standardSignature, verifyHubSignature } from "../../services/webhooks/Signature.ts"

describe("webhook signatures", () => {
  it("matches GitHub's published test vector", () => {
    expect(hubSignature("It's a Secret to Everybody", "Hello, World!")).toBe(
      "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    )
    expect(
      verifyHubSignature(
        "It's a Secret to Everybody",
        Buffer.from("Hello, World!"),
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
      )
    ).toBe(true)
    expect(verifyHubSignature("It's a Secret to Everybody", "Hello, World?", hubSignature("x", "Hello, World!"))).toBe(
      false
    )
  })

  it("signs Standard Webhooks content as id.timestamp.body, with whsec_ secrets base64-decoded", () => {
    // The example of the Standard Webhooks reference implementations.
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    const body = "{\"test\": 2432232314}"
    expect(standardSignature(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)).toBe(
      "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    )
  })
})
