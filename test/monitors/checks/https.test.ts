import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { check, target } from "./harness.ts"
import { httpServer } from "./servers.ts"

// A test CA and a certificate for DNS:localhost signed by it (valid until 2126).
const TEST_CA = `-----BEGIN CERTIFICATE-----
MIIBmDCCAT+gAwIBAgIUW0ukY0mdKqzMGrWioHY22gVbEDwwCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOQ2Fub3B5IFRlc3QgQ0EwIBcNMjYxMTIxMjM1NTAwWhgPMjEy
NjEwMjgyMzU1MDBaMBkxFzAVBgNVBAMMDkNhbm9weSBUZXN0IENBMFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAE+cMApREogKQPrPDqWKfcdxnB8CxaAv4JVw0Xdkpk
9olmLlGAQEJibZ3KMYrqgzt7SX9b/6wdCDbuNLwquD/sHqNjMGEwHQYDVR0OBBYE
FAvo4fr/Olf+rF559iNlaYaVefDoMB8GA1UdIwQYMBaAFAvo4fr/Olf+rF559iNl
aYaVefDoMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49
BAMCA0cAMEQCIDfD7j6f9x2gTSw8Wf4MH8m7koNl7gqur+TZwWwFa35XAiBEM8ay
DCB2ID3MUt7fr8PC/yo5t324a2mZqLw9UEjHIA==
-----END CERTIFICATE-----
`
const LOCALHOST_CERT = `-----BEGIN CERTIFICATE-----
MIIBqTCCAU+gAwIBAgIUTLaa/Ff69o8hU27YbO9UAl6AyFcwCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOQ2Fub3B5IFRlc3QgQ0EwIBcNMjYxMTIxMjM1NTAwWhgPMjEy
NjEwMjgyMzU1MDBaMBQxEjAQBgNVBAMMCWxvY2FsaG9zdDBZMBMGByqGSM49AgEG
CCqGSM49AwEHA0IABG4tQSauJcJuhphqI+fY7HEi26CixrwR0Wx3MWEXkMLB9c0V
bC120UoG6VH165+050slZ1FyAS0sSg2dd6QeoeijeDB2MBQGA1UdEQQNMAuCCWxv
Y2FsaG9zdDAJBgNVHRMEAjAAMBMGA1UdJQQMMAoGCCsGAQUFBwMBMB0GA1UdDgQW
BBS4lzb6w+WiX8mjLWAcCHBZQwpirTAfBgNVHSMEGDAWgBQL6OH6/zpX/qxeefYj
ZWmGlXnw6DAKBggqhkjOPQQDAgNIADBFAiB5PITGW0zg3kfGIFi2eAoAWykkFmZe
X4ZkNt9r2FRoUQIhAMdrIKFy+nGdxB6N62tjRpgSUHMJ5onAEaa80o5VX5yP
-----END CERTIFICATE-----
`
const LOCALHOST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgwDDKVd/3EZ7QWrj2
uOfKWp3UZrQ1Qc/YGCdf4JgpOT6hRANCAARuLUEmriXCboaYaiPn2OxxItugosa8
EdFsdzFhF5DCwfXNFWwtdtFKBulR9euftOdLJWdRcgEtLEoNnXekHqHo
-----END PRIVATE KEY-----
`

describe("https check", () => {
  const tls = { key: LOCALHOST_KEY, cert: LOCALHOST_CERT }

  it.live("a certificate from an untrusted CA is a TLS error", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((_req, _body, res) => res.end("secret"), { tls })
      const result = yield* check(target({ url: `https://localhost:${server.port}/` }))
      expect(result.status).toBe("down")
      expect(result.error).toMatch(/^TLS error: /)
      expect(server.requests).toHaveLength(0)
    }))

  it.live("with the CA trusted, https is up (name checked against the certificate, connection pinned)", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((_req, _body, res) => res.end("secret"), { tls })
      const result = yield* check(target({ url: `https://localhost:${server.port}/` }), {
        checker: { extraCaCertificates: [TEST_CA] }
      })
      expect(result).toMatchObject({ status: "up", statusCode: 200 })
      expect(server.requests).toHaveLength(1)
    }))

  it.live("a certificate for another name is a TLS error", () =>
    Effect.gen(function*() {
      const server = yield* httpServer((_req, _body, res) => res.end("secret"), { tls })
      const result = yield* check(target({ url: `https://127.0.0.1:${server.port}/` }), {
        checker: { extraCaCertificates: [TEST_CA] }
      })
      expect(result.status).toBe("down")
      expect(result.error).toMatch(/^TLS error: .*(altnames|does not match)/)
    }))
})
