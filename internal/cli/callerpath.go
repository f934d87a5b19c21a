package cli

import (
	"path/filepath"
	"strings"
)

// callerPath makes a --metadata file reference absolute in the caller's
// working directory: the daemon reads it, and its working directory is
// not the caller's. A URL stays as given (file:// with it).
func callerPath(ref string) string {
	if ref == "" || strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "https://") {
		return ref
	}
	path, scheme := ref, ""
	if p, ok := strings.CutPrefix(ref, "file://"); ok {
		path, scheme = p, "file://"
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return ref // no working directory: the daemon says the file is missing
	}
	return scheme + abs
}
