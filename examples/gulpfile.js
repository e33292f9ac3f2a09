// A gulp setup with Browsersync, switched to devproxy-native by changing one line:
//
//   - const browserSync = require('browser-sync').create()
//   + const browserSync = require('devproxy-native/browser-sync').create()
//
// Everything else is the gulp recipe from Browsersync's documentation: `browserSync.stream()` injects
// the compiled CSS, `browserSync.reload` reloads after the templates change. (To read: this
// repository does not depend on gulp or gulp-sass; in your project they are already there.)
'use strict'

const { src, dest, watch, series } = require('gulp')
const sass = require('gulp-sass')(require('sass'))
const browserSync = require('devproxy-native/browser-sync').create()

function styles() {
  return src('scss/**/*.scss').pipe(sass()).pipe(dest('public/css')).pipe(browserSync.stream())
}

function serve(done) {
  browserSync.init(
    {
      proxy: 'http://localhost:8080', // your app's server
      port: 3000,
      serveStatic: ['public'],        // local files win over the app's, as with Browsersync
    },
    done,
  )
  watch('scss/**/*.scss', styles)
  watch('templates/**/*.html').on('change', browserSync.reload)
}

exports.default = series(styles, serve)
