package policy

import (
	"iter"
	"strings"

	"github.com/cedar-policy/cedar-go"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
)

// The policies that can match a request are found by its action and its
// resource, so a decision evaluates those, not every policy: with many
// policies each naming a server or a tool, a call costs what the few that
// concern it cost.

type entry struct {
	id   cedar.PolicyID
	p    *cedar.Policy
	args bool // it may read context.args
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
	e := entry{id, p, strings.Contains(string(p.MarshalCedar()), "args")}
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
	list policyList
	args bool // one of them may read context.args
}

// candidates returns the policies that may match a request.
func (s *Set) candidates(action string, resource cedar.EntityUID, server string) *candidates {
	k := candidateKey{action, resource, server}
	if v, ok := s.cache.Load(k); ok {
		return v.(*candidates)
	}
	c := &candidates{}
	l := c.list
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
	c.list = l
	s.cache.Store(k, c)
	return c
}
