// Types of the package's entry point (index.js). The native API's types are generated from the Rust
// binding into binding.d.ts; this file re-exports them and adds what the JS side (lib/) declares.
export * from './binding'
