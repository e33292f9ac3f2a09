// One config for both: `devproxy --config examples/edge-worker/devproxy.config.mjs` tunes the rules
// against the site on your machine; worker.mjs applies the same rules at the edge.
export default {
  proxy: 'http://127.0.0.1:8080',
  rewriteRules: [
    // A legacy CDN host, swapped everywhere.
    { match: /https?:\/\/cdn\.legacy\.example/g, replace: 'https://cdn.example' },
    // A copy fix, on the first occurrence only (a string match, as String.prototype.replace).
    { match: 'Teh ', replace: 'The ' },
    // Tracking pixels removed.
    { match: /<img[^>]+tracker\.example[^>]*>/g, replace: '' },
    // A function rule: called for each match, with Browsersync's (req, res, match, ...).
    { match: /<title>([^<]*)<\/title>/, replace: (req, res, match, title) => `<title>${title.trim()} · ${req.url}</title>` },
  ],
}
