// Package web holds the operator console's templates and static files (its own script and style,
// and the vendored htmx and uPlot with their licenses and checksums), embedded into the binary:
// nothing is fetched at build or run time. http/ renders the templates and serves the files.
package web

import (
	"embed"
	"io/fs"
)

//go:embed templates static
var files embed.FS

// Templates is the folder of html/template files (*.html).
func Templates() fs.FS { return sub("templates") }

// Static is the folder served under /static/ (console.js, console.css, vendor/...).
func Static() fs.FS { return sub("static") }

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		panic(err) // the folder is embedded: cannot happen
	}
	return f
}
