package mcpconfig

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrUnknownServer is wrapped by the *Error for an entry that is neither a
// GitHub server, a catalog name nor a local command.
var ErrUnknownServer = errors.New("unknown server")

// Error is one problem with the mcp object. Its text names the server and
// the property and says what to do, e.g.
//
//	mcp server "filesystem": property "paths" is required
//
// Parse and Check report every problem they find; when there are several,
// the returned error joins them (one per line) and errors.As finds the first.
type Error struct {
	// Server is the entry's name; "" for a problem with the object as a
	// whole (or with an empty name).
	Server string
	// Property is the property at fault ("runCmd", "envs", "paths"); "" for
	// the entry as a whole.
	Property string
	// Env is the environment variable at fault inside "envs" (or "env"),
	// or the variable a header's placeholder names.
	Env string
	// Header is the header at fault inside "headers".
	Header string
	// Message is the text after the "mcp server <name>: " prefix.
	Message string
	// Err is the underlying cause, if any: a *json.SyntaxError,
	// ErrUnknownServer or ErrMissingSecret.
	Err error
}

func (e *Error) Error() string {
	if e.Server == "" {
		return "mcp: " + e.Message
	}
	return "mcp server " + quoteName(e.Server) + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Warning is a problem that does not stop the gateway, such as an unknown
// property (kept a warning so an older gateway accepts what a newer SDK sends).
type Warning struct {
	Server   string // "" for a warning about the document as a whole
	Property string // "" when the warning is about the entry as a whole
	Message  string // e.g. `unknown property "foo" ignored`
}

// String returns the warning as a log line, e.g.
//
//	mcp server "memory": unknown property "foo" ignored
func (w Warning) String() string {
	if w.Server == "" {
		return "mcp: " + w.Message
	}
	return "mcp server " + quoteName(w.Server) + ": " + w.Message
}

// CatalogError is a problem with a catalog file: it names the file and,
// where one is at fault, the entry and the property.
type CatalogError struct {
	File     string // the file's path; "(built in)" for the embedded catalog
	Entry    string // "" for a problem with the file as a whole
	Property string // a property declared under the entry's "properties", if one is at fault
	Message  string // the text after the "catalog <file>: entry <name>: " prefix
	Err      error  // the underlying cause, if any (an I/O error, a *json.SyntaxError)
}

func (e *CatalogError) Error() string {
	s := "catalog " + e.File + ": "
	if e.Entry != "" {
		s += "entry " + quoteName(e.Entry) + ": "
	}
	return s + e.Message
}

func (e *CatalogError) Unwrap() error { return e.Err }

// quoteName quotes a name for a message, shortening one too long to read.
func quoteName(name string) string {
	const keep = 64
	if len(name) <= MaxNameLen {
		return fmt.Sprintf("%q", name)
	}
	cut := keep
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return fmt.Sprintf("%q", name[:cut]+"...")
}

// joinErrors returns nil, the only error, or all of them joined.
func joinErrors(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}
