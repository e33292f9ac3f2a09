// `import browserSync from 'devproxy-native/browser-sync'` (and the named exports real browser-sync has
// under `import`): the CommonJS adapter (browser-sync.js), as an ES module.
import browserSync from './browser-sync.js'

export default browserSync
export const { create, exit, get, has, init, instances, notify, pause, reload, reset, resume, stream, use, watch } =
  browserSync
