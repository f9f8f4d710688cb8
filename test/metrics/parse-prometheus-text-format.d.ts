/** The parser's output (prom2json's shape); the package ships no types. */
declare module "parse-prometheus-text-format" {
  export interface Sample {
    readonly labels?: Readonly<Record<string, string>>
    readonly value?: string
    readonly buckets?: Readonly<Record<string, string>>
    readonly count?: string
    readonly sum?: string
  }
  export interface Family {
    readonly name: string
    readonly help: string
    readonly type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED"
    readonly metrics: ReadonlyArray<Sample>
  }
  const parse: (text: string) => Array<Family>
  export default parse
}
