// Package search ranks the MCP servers registered on a host against a
// free-text query, so that an agent can find which server (and which of its
// tools) fits a task without listing every tool of every server.
//
// It sits behind host mode's search over the registry: the daemon turns each
// registered server and its tools into a [Document] and calls [Rank] with the
// agent's words. Ranking is lexical, in memory, and deterministic.
//
// # Scoring
//
// [Rank] uses BM25 (k1 = 1.2, b = 0.75) in its field-weighted form, BM25F: a
// term's frequency in a document is the weighted sum of its frequencies in
// the fields (server name ×3, tool names ×2, server description and tool
// descriptions ×1) and the document length is the weighted sum of the field
// lengths. The inverse document frequency is the non-negative
// ln(1 + (N − n + 0.5)/(n + 0.5)), so any matching term adds to the score.
//
// # Terms
//
// Text is lowercased and cut at every character that is not a letter or a
// digit, and words are cut again at camelCase humps: readFile, read_file and
// read-file all give "read" and "file". A word that was cut into parts also
// gives its parts joined ("readfile"), so a query that spells a compound name
// whole, or spells it with other separators ("server-memory",
// "server_memory", "serverMemory"), ranks the server with exactly that name
// first. A short list of English stop words is dropped, and a light stemmer
// (see stem) maps plurals and -ing/-ed forms to one term: "files" matches
// "file", "creating" matches "create".
package search
