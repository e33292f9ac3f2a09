// Types of the package's entry point (index.js). The native API's types are generated from the Rust
// binding into binding.d.ts; this file re-exports them and adds what the JS side (lib/) declares.
import type { RewriteRule, RuleRequest, RuleResponse } from './binding'

export * from './binding'

/**
 * Applies `rules` to a string (or streams an array of chunks) with the proxy's engine, for trying
 * rules; see binding.d.ts's `rewrite`. Rule functions are called as in the proxy,
 * `(req, res, match, ...groups, offset, string, groups)`, with `context.req`/`context.res` as given, or
 * by default a `GET /` request without headers and a 200 response without headers.
 */
export declare function rewrite(
  input: string | Array<string | Buffer | Uint8Array>,
  rules: RewriteRule[],
  context?: { req?: Partial<RuleRequest> | object; res?: Partial<RuleResponse> | object },
): string
