package wire

import "fmt"

// The member names the gateway reads or decides on, by object, in one
// place. A message whose object holds a name that is not one of these but
// equal to one regardless of case (as Go's encoding/json and so mcp-go's
// servers match names to fields: "ARGUMENTS", "Uri", "progre\u017fsToken"
// with the long s, "\u212aind" with the Kelvin sign) is refused: such a
// server reads it as that member, the gateway reads no such member, so
// the gateway would decide on one message and the server execute another.
//
// A list here must hold every name of its object the gateway reads (grep
// wire.Get, wire.GetString, wire.Member in internal/gateway, internal/front
// and internal/upstream; TestVocabularyCoversReadPaths checks the paths the
// fuzz targets know). Names the gateway does not read may be in any case:
// they mean what they mean to the server alone.
var (
	envelopeNames = []string{"jsonrpc", "id", "method", "params", "result", "error"}
	paramsNames   = []string{
		"name", "uri", "arguments", "_meta", "cursor", "level", "mode",
		"progressToken", "requestId", "requestState", "inputResponses",
		"notifications", "capabilities", "protocolVersion", "clientInfo",
		"ref", "argument", "context",
	}
	metaNames = []string{
		"progressToken", "traceparent", "tracestate",
		"io.modelcontextprotocol/protocolVersion",
		"io.modelcontextprotocol/clientInfo",
		"io.modelcontextprotocol/clientCapabilities",
		"io.modelcontextprotocol/logLevel",
		"io.modelcontextprotocol/subscriptionId",
	}
	refNames      = []string{"type", "name", "uri"}
	argumentNames = []string{"name", "value"}
	contextNames  = []string{"arguments"}
)

// vocab is which of the lists above an object's names are checked
// against: the object's place in the message.
type vocab uint8

const (
	vocabNone     vocab = iota // a tool's data, a result: any names
	vocabEnvelope              // the message itself
	vocabParams                // params
	vocabMeta                  // params._meta
	vocabRef                   // params.ref
	vocabArgument              // params.argument (completion/complete)
	vocabContext               // params.context (completion/complete)
)

var vocabNames = [...][]string{
	vocabEnvelope: envelopeNames,
	vocabParams:   paramsNames,
	vocabMeta:     metaNames,
	vocabRef:      refNames,
	vocabArgument: argumentNames,
	vocabContext:  contextNames,
}

// maxVocabLen bounds the length of the names in vocabNames.
const maxVocabLen = 64

// vocabByLen is vocabNames by length: a plain name is compared only with
// the names of its length (one or two, mostly none).
var vocabByLen = func() (out [len(vocabNames)][maxVocabLen][]string) {
	for v, words := range vocabNames {
		for _, w := range words {
			out[v][len(w)] = append(out[v][len(w)], w)
		}
	}
	return out
}()

// vocabFolded is vocabNames folded (foldName), item by item.
var vocabFolded = func() (out [len(vocabNames)][]string) {
	for v, words := range vocabNames {
		for _, w := range words {
			out[v] = append(out[v], foldName(w))
		}
	}
	return out
}()

// child is the vocabulary of the object that is the value of the member
// named b[start:end] (quotes included; plain: no escape, only ASCII) of an
// object of vocabulary v.
func (v vocab) child(b []byte, start, end int, plain bool) vocab {
	if v != vocabEnvelope && v != vocabParams {
		return vocabNone
	}
	name := b[start+1 : end-1]
	if !plain {
		s, _ := unquote(b[start:end])
		name = []byte(s)
	}
	switch v {
	case vocabEnvelope:
		if string(name) == "params" {
			return vocabParams
		}
	case vocabParams:
		switch string(name) {
		case "_meta":
			return vocabMeta
		case "ref":
			return vocabRef
		case "argument":
			return vocabArgument
		case "context":
			return vocabContext
		}
	}
	return vocabNone
}

// misspelled reports the name of v's list that the member name
// b[start:end] (quotes included; plain: no escape, only ASCII) equals
// regardless of case without being it, or "". Plain names, the ordinary
// case, are compared byte by byte and allocate nothing.
func (v vocab) misspelled(b []byte, start, end int, plain bool) string {
	if v == vocabNone {
		return ""
	}
	words := vocabNames[v]
	if plain {
		name := b[start+1 : end-1]
		if len(name) == 0 || len(name) >= maxVocabLen {
			return ""
		}
	words:
		for _, w := range vocabByLen[v][len(name)] {
			// One pass: equal (the name is w), equal but for the case of
			// letters (misspelled), or neither (most words, at the first
			// byte).
			exact := true
			for k := 0; k < len(name); k++ {
				x, y := name[k], w[k]
				if x == y {
					continue
				}
				if lx := x | 0x20; lx != y|0x20 || lx < 'a' || lx > 'z' {
					continue words
				}
				exact = false
			}
			if exact {
				return ""
			}
			return w
		}
		return ""
	}
	s, _ := unquote(b[start:end])
	folded := ""
	for i, w := range words {
		if s == w {
			return ""
		}
		// Each rune of a name that folds to w folds to one byte of w (the
		// words are ASCII; ſ is two bytes, the Kelvin sign three), so it
		// has len(w) to 3*len(w) bytes.
		if len(s) >= len(w) && len(s) <= 3*len(w) {
			if folded == "" {
				folded = foldName(s)
			}
			if folded == vocabFolded[v][i] {
				return w
			}
		}
	}
	return ""
}

// FoldedNameError is Parse's error for a message holding a member whose
// name is not one the gateway reads but equal to one regardless of case
// ("ARGUMENTS" for "arguments", "URI" for "uri", "\u017f" for "s"). Servers
// that match names to fields regardless of case (Go's encoding/json, so
// mcp-go's) read it as that member, the gateway does not: the gateway
// would route and decide on one request and the server execute another.
type FoldedNameError struct {
	// Path names the member as written: "params.ARGUMENTS".
	Path string
	// Want is the name the gateway reads: "arguments".
	Want string
}

func (e *FoldedNameError) Error() string {
	return fmt.Sprintf("member %s is %q but for case, which some servers ignore and the gateway does not; spell it %q", e.Path, e.Want, e.Want)
}
