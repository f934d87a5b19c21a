package search

import (
	"cmp"
	"math"
	"slices"
)

// BM25 parameters, the usual defaults.
const (
	k1 = 1.2
	b  = 0.75
)

// Field weights of BM25F: a word in the server name says more about the
// server than the same word in a description.
const (
	weightName            = 3
	weightToolName        = 2
	weightDescription     = 1
	weightToolDescription = 1
)

// DefaultLimit is the number of results [Rank] returns when its limit is not
// positive.
const DefaultLimit = 10

// Document is what is known of a registered server for ranking.
type Document struct {
	Name        string
	Description string
	Tools       []Tool
}

// Tool is one tool of a server, as its tools/list describes it.
type Tool struct {
	Name        string
	Description string
}

// Result is a server that matched a query.
type Result struct {
	Name  string
	Score float64
	// Tools names the server's tools whose name or description holds a
	// query term, in the server's order.
	Tools []string
}

// Rank returns the documents that match query, best first, at most limit of
// them (limit ≤ 0 means [DefaultLimit]). Equal scores are ordered by name.
// Documents that match no query term are left out; a query made only of stop
// words, or empty, returns nil.
func Rank(docs []Document, query string, limit int) []Result {
	if limit <= 0 {
		limit = DefaultLimit
	}
	terms := queryTerms(query)
	if len(terms) == 0 || len(docs) == 0 {
		return nil
	}

	indexed := make([]indexedDoc, len(docs))
	var totalLength float64
	docFreq := map[string]int{}
	for i, d := range docs {
		indexed[i] = index(d)
		totalLength += indexed[i].length
		for t := range indexed[i].freq {
			docFreq[t]++
		}
	}
	avgLength := totalLength / float64(len(docs))
	n := float64(len(docs))

	var results []Result
	for i, d := range indexed {
		score := 0.0
		for _, t := range terms {
			tf := d.freq[t]
			if tf == 0 {
				continue
			}
			df := float64(docFreq[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			norm := 1 - b + b*d.length/avgLength
			score += idf * tf * (k1 + 1) / (tf + k1*norm)
		}
		if score > 0 {
			results = append(results, Result{Name: docs[i].Name, Score: score, Tools: d.matchingTools(terms)})
		}
	}
	slices.SortFunc(results, func(x, y Result) int {
		if c := cmp.Compare(y.Score, x.Score); c != 0 {
			return c
		}
		return cmp.Compare(x.Name, y.Name)
	})
	if len(results) > limit {
		results = results[:limit]
	}
	return results
}

// indexedDoc holds a document's weighted term frequencies and length.
type indexedDoc struct {
	freq   map[string]float64
	length float64
	tools  []toolTerms
}

type toolTerms struct {
	name  string
	terms map[string]bool
}

func index(d Document) indexedDoc {
	x := indexedDoc{freq: map[string]float64{}}
	add := func(text string, weight float64) []string {
		terms := tokenize(text)
		for _, t := range terms {
			x.freq[t] += weight
		}
		x.length += weight * float64(len(terms))
		return terms
	}
	add(d.Name, weightName)
	add(d.Description, weightDescription)
	for _, tool := range d.Tools {
		tt := toolTerms{name: tool.Name, terms: map[string]bool{}}
		for _, t := range add(tool.Name, weightToolName) {
			tt.terms[t] = true
		}
		for _, t := range add(tool.Description, weightToolDescription) {
			tt.terms[t] = true
		}
		x.tools = append(x.tools, tt)
	}
	return x
}

func (x indexedDoc) matchingTools(terms []string) []string {
	var names []string
	for _, tool := range x.tools {
		for _, t := range terms {
			if tool.terms[t] {
				names = append(names, tool.name)
				break
			}
		}
	}
	return names
}

// queryTerms tokenizes the query, each term once, in the order it first
// appears, so that the scores add up in a fixed order.
func queryTerms(query string) []string {
	var terms []string
	seen := map[string]bool{}
	for _, t := range tokenize(query) {
		if !seen[t] {
			seen[t] = true
			terms = append(terms, t)
		}
	}
	return terms
}
