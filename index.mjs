// The package's ES-module entry: the CommonJS API (index.js) with its named exports.
import devproxy from './index.js'

export default devproxy
export const { start, rewrite, ProxyServer, toHar } = devproxy
