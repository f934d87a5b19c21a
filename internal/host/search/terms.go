package search

import (
	"strings"
	"unicode"
)

// stopWords are dropped from queries and documents: they match everywhere
// and mean little. Kept small on purpose: "get", "list", "add" or "all" name
// tools.
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true,
	"be": true, "by": true, "can": true, "do": true, "for": true, "from": true,
	"how": true, "i": true, "if": true, "in": true, "into": true, "is": true,
	"it": true, "its": true, "me": true, "my": true, "of": true, "on": true,
	"or": true, "so": true, "some": true, "that": true, "the": true,
	"their": true, "then": true, "there": true, "these": true, "this": true,
	"to": true, "was": true, "we": true, "what": true, "when": true,
	"which": true, "with": true, "you": true, "your": true,
}

// tokenize returns the terms of text in order: the stemmed parts of each
// word without stop words, each compound word followed by its parts joined.
func tokenize(text string) []string {
	var terms []string
	for _, word := range strings.FieldsFunc(text, isSeparator) {
		parts := splitWord(word)
		for _, p := range parts {
			if !stopWords[p] {
				terms = append(terms, stem(p))
			}
		}
		if len(parts) > 1 {
			terms = append(terms, stem(strings.Join(parts, "")))
		}
	}
	return terms
}

// isSeparator cuts text into words; '_' and '-' stay inside a word so that
// read_file is one compound word.
func isSeparator(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-'
}

// splitWord cuts a word at '_', '-' and camelCase humps and lowercases the
// parts: "readFile" → read, file; "HTTPServer" → http, server.
func splitWord(word string) []string {
	var parts []string
	for _, chunk := range strings.FieldsFunc(word, func(r rune) bool { return r == '_' || r == '-' }) {
		runes := []rune(chunk)
		start := 0
		for i := 1; i < len(runes); i++ {
			prev, cur := runes[i-1], runes[i]
			lowerToUpper := unicode.IsLower(prev) && unicode.IsUpper(cur)
			// The last capital of a run starts the next word: HTTPServer.
			acronymEnd := unicode.IsUpper(prev) && unicode.IsUpper(cur) &&
				i+1 < len(runes) && unicode.IsLower(runes[i+1])
			if lowerToUpper || acronymEnd {
				parts = append(parts, strings.ToLower(string(runes[start:i])))
				start = i
			}
		}
		parts = append(parts, strings.ToLower(string(runes[start:])))
	}
	return parts
}

// minStem is the shortest stem the stemmer leaves.
const minStem = 3

// stem maps a lowercased word to a light stem, the same for both the query
// and the documents, so only consistency matters, not linguistics:
//
//   - plurals: "entities" → "entity", "searches" → "search", "files" → "file"
//     (not after "ss", "us", "is": "class", "status", "analysis" stay);
//   - "-ing" and "-ed": "reading" → "read", "stopped" → "stop";
//   - then a final "e", so that "create", "creates", "created" and
//     "creating" all give "creat".
//
// A suffix is stripped only when at least three letters stay. Words holding
// a digit are left alone.
func stem(w string) string {
	if strings.ContainsFunc(w, unicode.IsDigit) {
		return w
	}
	w = stripPlural(w)
	for _, suffix := range []string{"ing", "ed"} {
		if s, ok := strings.CutSuffix(w, suffix); ok && len([]rune(s)) >= minStem {
			w = undouble(s)
			break
		}
	}
	if s, ok := strings.CutSuffix(w, "e"); ok && len([]rune(s)) >= minStem {
		w = s
	}
	return w
}

func stripPlural(w string) string {
	long := func(s string) bool { return len([]rune(s)) >= minStem }
	if s, ok := strings.CutSuffix(w, "ies"); ok && long(s+"y") {
		return s + "y"
	}
	if s, ok := strings.CutSuffix(w, "es"); ok && long(s) {
		for _, sibilant := range []string{"s", "x", "z", "ch", "sh"} {
			if strings.HasSuffix(s, sibilant) {
				return s
			}
		}
	}
	for _, keep := range []string{"ss", "us", "is"} {
		if strings.HasSuffix(w, keep) {
			return w
		}
	}
	if s, ok := strings.CutSuffix(w, "s"); ok && long(s) {
		return s
	}
	return w
}

// undouble drops the doubled consonant left by "-ing" or "-ed":
// "stopp" → "stop". Not l, s or z: "call", "pass", "buzz".
func undouble(s string) string {
	r := []rune(s)
	n := len(r)
	if n >= minStem+1 && r[n-1] == r[n-2] && !strings.ContainsRune("aeioulsz", r[n-1]) {
		return string(r[:n-1])
	}
	return s
}
