package policy

import (
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/cedar-policy/cedar-go"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
)

// The policies that can match a request are found by its action and its
// resource, so a decision evaluates those, not every policy: with many
// policies each naming a server or a tool, a call costs what the few that
// concern it cost.

type entry struct {
	id     cedar.PolicyID
	p      *cedar.Policy
	args   bool // it may read context.args
	static bool // it reads no context: its result depends on the entities only
	forbid bool
}

// policyList is a PolicyIterator over a slice.
type policyList []entry

func (l policyList) All() iter.Seq2[cedar.PolicyID, *cedar.Policy] {
	return func(yield func(cedar.PolicyID, *cedar.Policy) bool) {
		for _, e := range l {
			if !yield(e.id, e.p) {
				return
			}
		}
	}
}

// listIter is a PolicyIterator whose iterator is made once.
type listIter struct {
	all iter.Seq2[cedar.PolicyID, *cedar.Policy]
}

func (l listIter) All() iter.Seq2[cedar.PolicyID, *cedar.Policy] { return l.all }

// index files each policy by the actions its scope allows ("" for any)
// and by what its resource scope names: nothing (any resource, or a type),
// a server (resource in MCP::Server::"x"), or one entity (resource == ...).
type index struct {
	anyResource map[string][]entry                     // by action
	byServer    map[string]map[string][]entry          // action → server name
	byEntity    map[string]map[cedar.EntityUID][]entry // action → resource
}

func newIndex() index {
	return index{anyResource: map[string][]entry{}, byServer: map[string]map[string][]entry{}, byEntity: map[string]map[cedar.EntityUID][]entry{}}
}

func (x *index) add(id cedar.PolicyID, p *cedar.Policy) {
	a := (*xast.Policy)(p.AST())
	var actions []string
	switch s := a.Action.(type) {
	case xast.ScopeTypeEq:
		actions = []string{string(s.Entity.ID)}
	case xast.ScopeTypeIn:
		actions = []string{string(s.Entity.ID)}
	case xast.ScopeTypeInSet:
		for _, e := range s.Entities {
			actions = append(actions, string(e.ID))
		}
	default:
		actions = []string{""}
	}
	text := string(p.MarshalCedar())
	e := entry{id: id, p: p, args: strings.Contains(text, "args"), static: !strings.Contains(text, "context"), forbid: p.Effect() == cedar.Forbid}
	for _, act := range actions {
		switch s := a.Resource.(type) {
		case xast.ScopeTypeEq:
			x.entity(act, s.Entity, e)
		case xast.ScopeTypeIn:
			if s.Entity.Type == TypeServer {
				x.server(act, string(s.Entity.ID), e)
			}
			x.entity(act, s.Entity, e) // `in` includes the entity itself
		case xast.ScopeTypeIsIn:
			if s.Entity.Type == TypeServer {
				x.server(act, string(s.Entity.ID), e)
			}
			x.entity(act, s.Entity, e)
		default:
			x.anyResource[act] = append(x.anyResource[act], e)
		}
	}
}

func (x *index) server(act, name string, e entry) {
	if x.byServer[act] == nil {
		x.byServer[act] = map[string][]entry{}
	}
	x.byServer[act][name] = append(x.byServer[act][name], e)
}

func (x *index) entity(act string, uid cedar.EntityUID, e entry) {
	if x.byEntity[act] == nil {
		x.byEntity[act] = map[cedar.EntityUID][]entry{}
	}
	x.byEntity[act][uid] = append(x.byEntity[act][uid], e)
}

type candidateKey struct {
	action   string
	resource cedar.EntityUID
	server   string
}

// candidates are what may match a request on resource by action, whose
// server (for a tool, prompt or resource) is server.
type candidates struct {
	// Those that read no context (their results are cached per request's
	// entities, see static), by effect, and the others.
	staticForbid, staticPermit, dynamic policyList
	dynamicAll                          listIter // dynamic's iterator, made once
	args                                bool     // one of the others may read context.args
}

// candidates returns the policies that may match a request.
func (s *Set) candidates(action string, resource cedar.EntityUID, server string) *candidates {
	k := candidateKey{action, resource, server}
	s.cache.mu.RLock()
	cached := s.cache.m[k]
	s.cache.mu.RUnlock()
	if cached != nil {
		return cached
	}
	c := &candidates{}
	var l policyList
	seen := map[cedar.PolicyID]bool{}
	for _, act := range []string{"", action} {
		for _, group := range [][]entry{s.index.anyResource[act], s.index.byServer[act][server], s.index.byEntity[act][resource]} {
			for _, e := range group {
				if !seen[e.id] {
					seen[e.id] = true
					l = append(l, e)
					c.args = c.args || e.args
				}
			}
		}
		if action == "" {
			break
		}
	}
	for _, e := range l {
		switch {
		case e.static && e.forbid:
			c.staticForbid = append(c.staticForbid, e)
		case e.static:
			c.staticPermit = append(c.staticPermit, e)
		default:
			c.dynamic = append(c.dynamic, e)
			c.args = c.args || e.args
		}
	}
	c.dynamicAll = listIter{c.dynamic.All()}
	s.cache.mu.Lock()
	if s.cache.m == nil {
		s.cache.m = map[candidateKey]*candidates{}
	}
	if len(s.cache.m) < maxStatic {
		s.cache.m[k] = c
	}
	s.cache.mu.Unlock()
	return c
}

// candidateCache holds the candidates by action, resource and server: a
// map with a comparable key, so a lookup allocates nothing.
type candidateCache struct {
	mu sync.RWMutex
	m  map[candidateKey]*candidates
}

// staticResult is what the context-free candidates decide for one
// request's entities.
type staticResult struct {
	args             []string // the server's arguments it was decided with
	forbids, permits []cedar.DiagnosticReason
	errors           []cedar.DiagnosticError
}

// maxStatic bounds the cached static results of a set (one per principal
// and item, in practice).
const maxStatic = 100000

// staticCache holds the static results by everything the request's
// entities hold (the server's arguments are compared on lookup): a map
// with a comparable key, so a lookup allocates nothing.
type staticCache struct {
	mu sync.RWMutex
	m  map[staticKey]*staticResult
}

type staticKey struct {
	sandbox                              bool
	principal, action                    string
	kind                                 cedar.EntityType
	name                                 string
	server, serverType, identityURL, cmd string
	oauth                                bool
	annotations                          [4]byte
}

// entityKey identifies everything the request's entities hold but the
// server's arguments.
func (r *Request) entityKey() staticKey {
	k := staticKey{sandbox: r.Sandbox, principal: r.Principal, action: r.Action, kind: r.Kind, name: r.Name,
		server: r.Server.Name, serverType: r.Server.Type, identityURL: r.Server.IdentityURL, cmd: r.Server.Command, oauth: r.Server.RequiresOAuth}
	for i, v := range []*bool{r.Annotations.ReadOnly, r.Annotations.Destructive, r.Annotations.Idempotent, r.Annotations.OpenWorld} {
		switch {
		case v == nil:
			k.annotations[i] = '-'
		case *v:
			k.annotations[i] = 't'
		default:
			k.annotations[i] = 'f'
		}
	}
	return k
}

// static evaluates the context-free candidates for the request's
// entities, once: their result is the same for every call of the item by
// the principal, whatever its arguments and time.
func (s *Set) static(r *Request, c *candidates, g *entityGetter, req cedar.Request) *staticResult {
	key := r.entityKey()
	s.statics.mu.RLock()
	res := s.statics.m[key]
	s.statics.mu.RUnlock()
	if res != nil && slices.Equal(res.args, r.Server.Args) {
		return res
	}
	res = &staticResult{args: slices.Clone(r.Server.Args)}
	if len(c.staticForbid) > 0 {
		ok, diag := cedar.Authorize(c.staticForbid, g, req)
		if !ok {
			res.forbids = diag.Reasons
		}
		res.errors = append(res.errors, diag.Errors...)
	}
	if len(c.staticPermit) > 0 {
		ok, diag := cedar.Authorize(c.staticPermit, g, req)
		if ok {
			res.permits = diag.Reasons
		}
		res.errors = append(res.errors, diag.Errors...)
	}
	s.statics.mu.Lock()
	if s.statics.m == nil {
		s.statics.m = map[staticKey]*staticResult{}
	}
	if _, ok := s.statics.m[key]; ok || len(s.statics.m) < maxStatic {
		s.statics.m[key] = res
	}
	s.statics.mu.Unlock()
	return res
}
