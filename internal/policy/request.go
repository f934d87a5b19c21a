package policy

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cedar-policy/cedar-go"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// Server is what policies see of a server (MCP::Server's attributes).
type Server struct {
	Name string
	// Type is "local-stdio", "remote-http", "remote-sse", "remote-dcr",
	// "remote-no-dcr", ...
	Type          string
	IdentityURL   string
	RequiresOAuth bool
	Command       string
	Args          []string
}

// Annotations are a tool's behaviour hints. A nil field is absent.
type Annotations struct {
	ReadOnly, Destructive, Idempotent, OpenWorld *bool
}

// ParseAnnotations reads a tool definition's "annotations" (it runs on
// every call: it reads the four hints without decoding the definition).
func ParseAnnotations(def json.RawMessage) Annotations {
	ann := wire.Get(def, "annotations")
	if ann == nil {
		return Annotations{}
	}
	hint := func(name string) *bool {
		switch string(wire.Get(ann, name)) {
		case "true":
			return &yes
		case "false":
			return &no
		}
		return nil
	}
	return Annotations{hint("readOnlyHint"), hint("destructiveHint"), hint("idempotentHint"), hint("openWorldHint")}
}

var yes, no = true, false

// Request is one question to the policies.
type Request struct {
	// Principal is the sandbox's name (host mode: MCP::Sandbox) or, when
	// Sandbox is false, the client's (MCP::Client).
	Principal string
	Sandbox   bool
	Action    string
	Server    Server
	// Kind is the resource's type: TypeTool, TypePrompt, TypeResource,
	// TypePrimordial, or TypeServer (register).
	Kind cedar.EntityType
	// Name is the tool's or prompt's original name, the resource's URI or
	// the built-in tool's name.
	Name        string
	Annotations Annotations
	// Args are the call's arguments (a JSON object); nil when not known
	// (listing), which leaves context.args out.
	Args json.RawMessage
	Time time.Time
}

func (r *Request) principal() cedar.EntityUID {
	if r.Sandbox {
		return cedar.NewEntityUID(TypeSandbox, cedar.String(r.Principal))
	}
	return cedar.NewEntityUID(TypeClient, cedar.String(r.Principal))
}

func (r *Request) resource() cedar.EntityUID {
	switch r.Kind {
	case TypeServer:
		return cedar.NewEntityUID(TypeServer, cedar.String(r.Server.Name))
	case TypePrimordial, TypeResource:
		return cedar.NewEntityUID(r.Kind, cedar.String(r.Name))
	}
	return cedar.NewEntityUID(r.Kind, cedar.String(r.Server.Name+"/"+r.Name))
}

// scratch is what one decision needs for a moment: the maps records are
// built in (cedar.NewRecord copies them) and the entity getter, reused
// from decision to decision so a decision allocates less (its garbage
// collection is most of its tail latency).
type scratch struct {
	g    entityGetter
	maps []cedar.RecordMap // by nesting depth; [0] is the context's
}

var scratchPool = sync.Pool{New: func() any { return &scratch{} }}

// recordMap returns the scratch map of a depth, empty.
func (sc *scratch) recordMap(depth int) cedar.RecordMap {
	if sc == nil {
		return cedar.RecordMap{}
	}
	for len(sc.maps) <= depth {
		sc.maps = append(sc.maps, cedar.RecordMap{})
	}
	m := sc.maps[depth]
	clear(m)
	return m
}

func (sc *scratch) release() {
	sc.g = entityGetter{}
	for _, m := range sc.maps {
		clear(m)
	}
	scratchPool.Put(sc)
}

func (r *Request) cedarRequest(sc *scratch, principal, resource cedar.EntityUID, withArgs bool) cedar.Request {
	ctx := sc.recordMap(0)
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	ctx["request_time"] = cedar.NewDatetime(t)
	if r.Args != nil && withArgs {
		if v, ok := jsonToCedar(sc, r.Args); ok {
			ctx["args"] = v
		} else {
			ctx["args"] = cedar.NewRecord(nil)
		}
	}
	return cedar.Request{
		Principal: principal,
		Action:    cedar.NewEntityUID(TypeAction, cedar.String(r.Action)),
		Resource:  resource,
		Context:   cedar.NewRecord(ctx),
	}
}

// pessimistic reads an annotation, or its pessimistic value when absent.
func pessimistic(v *bool, worst bool) cedar.Boolean {
	if v == nil {
		return cedar.Boolean(worst)
	}
	return cedar.Boolean(*v)
}

// entityGetter serves the few entities of one request, each built once
// when a policy first reads it.
type entityGetter struct {
	r                            *Request
	principalUID, resourceUID    cedar.EntityUID
	principal, res, srv          cedar.Entity
	hasPrincipal, hasRes, hasSrv bool
}

func (g *entityGetter) Get(uid cedar.EntityUID) (cedar.Entity, bool) {
	r := g.r
	switch uid.Type {
	case TypeServer:
		if string(uid.ID) != r.Server.Name {
			return cedar.Entity{}, false
		}
		if !g.hasSrv {
			g.srv, g.hasSrv = r.serverEntity(), true
		}
		return g.srv, true
	case TypeSandbox, TypeClient:
		if uid != g.principalUID {
			return cedar.Entity{}, false
		}
		if !g.hasPrincipal {
			g.principal = cedar.Entity{UID: uid, Attributes: cedar.NewRecord(cedar.RecordMap{"name": cedar.String(r.Principal)})}
			g.hasPrincipal = true
		}
		return g.principal, true
	case TypeAction:
		return cedar.Entity{UID: uid}, true
	}
	if uid != g.resourceUID {
		return cedar.Entity{}, false
	}
	if !g.hasRes {
		g.res, g.hasRes = r.resourceEntity(uid), true
	}
	return g.res, true
}

func (r *Request) resourceEntity(uid cedar.EntityUID) cedar.Entity {
	attrs := cedar.RecordMap{"name": cedar.String(r.Name)}
	if r.Kind != TypePrimordial && r.Server.Name != "" {
		attrs["server"] = cedar.NewEntityUID(TypeServer, cedar.String(r.Server.Name))
		attrs["serverName"] = cedar.String(r.Server.Name)
	}
	switch r.Kind {
	case TypeTool:
		a := r.Annotations
		attrs["readOnly"] = pessimistic(a.ReadOnly, false)
		attrs["destructive"] = pessimistic(a.Destructive, true)
		attrs["idempotent"] = pessimistic(a.Idempotent, false)
		attrs["openWorld"] = pessimistic(a.OpenWorld, true)
	case TypeResource:
		attrs["uri"] = cedar.String(r.Name)
	}
	var parents cedar.EntityUIDSet
	if r.Kind != TypePrimordial && r.Server.Name != "" {
		parents = cedar.NewEntityUIDSet(cedar.NewEntityUID(TypeServer, cedar.String(r.Server.Name)))
	}
	return cedar.Entity{UID: uid, Parents: parents, Attributes: cedar.NewRecord(attrs)}
}

func (r *Request) serverEntity() cedar.Entity {
	s := r.Server
	args := make([]cedar.Value, len(s.Args))
	for i, a := range s.Args {
		args[i] = cedar.String(a)
	}
	return cedar.Entity{UID: cedar.NewEntityUID(TypeServer, cedar.String(s.Name)), Attributes: cedar.NewRecord(cedar.RecordMap{
		"name":          cedar.String(s.Name),
		"type":          cedar.String(s.Type),
		"identityURL":   cedar.String(s.IdentityURL),
		"requiresOAuth": cedar.Boolean(s.RequiresOAuth),
		"command":       cedar.String(s.Command),
		"args":          cedar.NewSet(args...),
	})}
}

// jsonToCedar converts a JSON value: objects to records, arrays to sets,
// integers to Long, other numbers to decimal (or, beyond its range, a
// string), null members left out. Every object is a record, whatever its
// keys. Records are built in sc's maps (nil: new ones).
//
// It parses the bytes itself, for two reasons. cedar-go's own JSON form of
// values (types.UnmarshalJSON, Record.UnmarshalJSON) reads an object whose
// one key is "__entity" or "__extn" as an entity reference or an extension
// value, and the arguments are the caller's: they must never become an
// entity a policy compares them with (TestArgumentsStayRecords); it also
// refuses null and non-integer numbers. And a conversion driven by the
// streaming tokenizer cedar-go uses (go-json-experiment's jsontext) made
// BenchmarkDecide's median about 0.18 µs (12 %) slower, arguments being
// converted on every call that a policy reading them decides
// (docs/benchmarks.md, Policies).
func jsonToCedar(sc *scratch, raw json.RawMessage) (cedar.Value, bool) {
	p := &jsonParser{b: raw, sc: sc}
	v, ok := p.value(0)
	p.space()
	if !ok || p.i != len(p.b) {
		return nil, false
	}
	return v, v != nil
}

// maxDepth bounds the nesting of converted arguments.
const maxDepth = 64

type jsonParser struct {
	b  []byte
	i  int
	sc *scratch
}

func (p *jsonParser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

// value parses one value; a nil Value with ok is JSON null.
func (p *jsonParser) value(depth int) (cedar.Value, bool) {
	p.space()
	if p.i >= len(p.b) || depth > maxDepth {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case c == '{':
		p.i++
		m := p.sc.recordMap(depth + 1) // 0 is the context's
		p.space()
		if p.i < len(p.b) && p.b[p.i] == '}' {
			p.i++
			return cedar.NewRecord(m), true
		}
		for {
			p.space()
			k, ok := p.str()
			if !ok {
				return nil, false
			}
			p.space()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return nil, false
			}
			p.i++
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			if v != nil {
				m[cedar.String(k)] = v
			}
			p.space()
			if p.i >= len(p.b) {
				return nil, false
			}
			p.i++
			switch p.b[p.i-1] {
			case ',':
				continue
			case '}':
				return cedar.NewRecord(m), true
			}
			return nil, false
		}
	case c == '[':
		p.i++
		var vs []cedar.Value
		p.space()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			p.i++
			return cedar.NewSet(), true
		}
		for {
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			if v != nil {
				vs = append(vs, v)
			}
			p.space()
			if p.i >= len(p.b) {
				return nil, false
			}
			p.i++
			switch p.b[p.i-1] {
			case ',':
				continue
			case ']':
				return cedar.NewSet(vs...), true
			}
			return nil, false
		}
	case c == '"':
		s, ok := p.str()
		return cedar.String(s), ok
	case c == 't' && bytes.HasPrefix(p.b[p.i:], []byte("true")):
		p.i += 4
		return cedar.True, true
	case c == 'f' && bytes.HasPrefix(p.b[p.i:], []byte("false")):
		p.i += 5
		return cedar.False, true
	case c == 'n' && bytes.HasPrefix(p.b[p.i:], []byte("null")):
		p.i += 4
		return nil, true
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		for p.i < len(p.b) && strings.IndexByte("+-0123456789.eE", p.b[p.i]) >= 0 {
			p.i++
		}
		return number(string(p.b[start:p.i]))
	}
	return nil, false
}

// str parses a string, unescaping it when it holds escapes.
func (p *jsonParser) str() (string, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	start := p.i
	escaped := false
	for p.i++; p.i < len(p.b); p.i++ {
		switch p.b[p.i] {
		case '\\':
			escaped = true
			p.i++
		case '"':
			p.i++
			if !escaped {
				return string(p.b[start+1 : p.i-1]), true
			}
			var s string
			err := json.Unmarshal(p.b[start:p.i], &s)
			return s, err == nil
		}
	}
	return "", false
}

func number(s string) (cedar.Value, bool) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return cedar.Long(i), true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, false
	}
	if !math.IsInf(f, 0) && math.Abs(f) < 9e14 {
		if d, err := cedar.NewDecimalFromFloat(f); err == nil {
			return d, true
		}
	}
	return cedar.String(s), true
}
