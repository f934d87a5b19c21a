package front

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/gateway"
	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// The quotas of what a tenant holds in the front: its sessions
// (MaxSessions, MaxSessionsPerTenant) and the bytes kept to replay its
// streams (ReplayBytesPerStream, ReplayBytesPerSession, ReplayBytes). At a
// limit the tenant's own idlest or oldest holding goes first, and never
// another tenant's unless that one holds more.

// maxClientName bounds the client identity a sandbox gateway keeps.
const maxClientName = 128

// tenantKey is whose quota a new session counts against: its sandbox (with
// Tenants), else its client identity, the clientInfo.name of its
// initialize. A client can claim any name; a name claimed by many clients
// is one tenant, and a client inventing names is held by MaxSessions,
// which takes places from the tenant holding the most, never from one
// holding fewer than the newcomer.
func (h *Handler) tenantKey(gw *gateway.Gateway, m *wire.Message) tenantKey {
	if h.Tenants != nil {
		return tenantKey{gw: gw}
	}
	name, _ := wire.GetString(wire.Get(m.Params, "clientInfo"), "name")
	if len(name) > maxClientName {
		name = name[:maxClientName]
	}
	return tenantKey{gw: gw, client: name}
}

// Why a session was evicted, as metrics and 404s name it.
const (
	evictPerTenant = "per_tenant"
	evictTotal     = "total"
)

// admit takes a place for a new session of tenant k, ending the sessions
// that must make room (see MaxSessions and MaxSessionsPerTenant); a
// non-empty refusal says why there is none. The place is the caller's
// until the session is added or unreserve gives it back.
func (h *Handler) admit(k tenantKey) (_ *tenant, refusal string) {
	type victim struct {
		s     *session
		limit string
	}
	h.watchOnce.Do(func() { h.Telemetry.WatchReplay(h.ReplayBytesHeld) })
	var victims []victim
	h.mu.Lock()
	if h.sessions == nil {
		h.sessions = map[string]*session{}
		h.tenants = map[tenantKey]*tenant{}
	}
	t := h.tenants[k]
	if t == nil {
		t = &tenant{key: k, members: map[*session]struct{}{}}
	}
	if n := h.MaxSessionsPerTenant; n > 0 && t.held() >= n {
		v := t.idlest(false)
		if v == nil {
			h.mu.Unlock()
			h.Telemetry.SessionRefused(evictPerTenant)
			return nil, fmt.Sprintf("%s holds its limit of %d sessions (--max-sessions-per-tenant) and each has a call in progress; retry later, or end unused sessions with DELETE", h.describe(k), n)
		}
		h.removeLocked(v)
		h.rememberEvicted(v.id, fmt.Sprintf("%s reached its limit of %d sessions (--max-sessions-per-tenant) and this was its session idle for longest", h.describe(k), n))
		victims = append(victims, victim{v, evictPerTenant})
	}
	if n := h.MaxSessions; n > 0 && len(h.sessions)+h.pending >= n {
		var v *session
		if heavy := h.heaviestLocked(t); heavy != nil {
			v = heavy.idlest(true)
		} else {
			v = t.idlest(false)
		}
		if v == nil {
			h.mu.Unlock()
			h.Telemetry.SessionRefused(evictTotal)
			return nil, fmt.Sprintf("this gateway holds its limit of %d sessions (--max-sessions), %s holds as many as any other, and each of its sessions has a call in progress; retry later, or end unused sessions with DELETE", n, h.describe(k))
		}
		h.removeLocked(v)
		h.rememberEvicted(v.id, fmt.Sprintf("this gateway reached its limit of %d sessions (--max-sessions) and this was the idlest session of the tenant holding the most", n))
		victims = append(victims, victim{v, evictTotal})
	}
	h.tenants[k] = t
	t.pending++
	h.pending++
	h.mu.Unlock()
	for _, v := range victims {
		h.Telemetry.SessionEvicted(v.limit)
		h.logger().Info("session evicted to make room for a new one; its client must initialize again",
			"session", v.s.logID(), "limit", v.limit, "tenant", h.describe(v.s.tenant.key), "idle", time.Since(time.Unix(0, v.s.lastCall.Load())).Round(time.Millisecond))
		h.endSession(v.s)
	}
	return t, ""
}

// heaviestLocked returns the tenant holding the most sessions when it
// holds more than t, of several such the one whose idlest session has
// been idle longest; nil when none holds more. h.mu is held.
func (h *Handler) heaviestLocked(t *tenant) *tenant {
	var best *tenant
	var bestIdle int64
	for _, o := range h.tenants {
		if o == t || o.held() <= t.held() || len(o.members) == 0 {
			continue
		}
		idle := o.idlest(true).lastCall.Load()
		if best == nil || o.held() > best.held() || (o.held() == best.held() && idle < bestIdle) {
			best, bestIdle = o, idle
		}
	}
	return best
}

// describe names a tenant in messages: its client identity; a sandbox's
// gateway knows no name the front could give.
func (h *Handler) describe(k tenantKey) string {
	if h.Tenants != nil {
		return "this sandbox"
	}
	return fmt.Sprintf("the client %q (its clientInfo.name)", k.client)
}

// unreserve gives back a place admit took for a session that did not start.
func (h *Handler) unreserve(t *tenant) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tenants == nil {
		return
	}
	t.pending--
	h.pending--
	if t.held() == 0 {
		delete(h.tenants, t.key)
	}
}

// maxEvictedKept bounds the evicted session ids kept for a clearer 404.
const maxEvictedKept = 1024

// removeLocked takes a session out of the handler; h.mu is held. The
// caller ends it (endSession) once h.mu is released.
func (h *Handler) removeLocked(s *session) {
	delete(h.sessions, s.id)
	t := s.tenant
	delete(t.members, s)
	if t.held() == 0 && h.tenants[t.key] == t {
		delete(h.tenants, t.key)
	}
}

// rememberEvicted keeps an evicted session's id, so that its client's next
// request learns why its session is gone; h.mu is held.
func (h *Handler) rememberEvicted(id, why string) {
	if h.evicted == nil {
		h.evicted = map[string]string{}
	}
	h.evicted[id] = why
	h.evictLog = append(h.evictLog, id)
	if len(h.evictLog) > maxEvictedKept {
		delete(h.evicted, h.evictLog[0])
		h.evictLog = slices.Delete(h.evictLog, 0, 1)
	}
}

// endSession ends a session taken out of the handler.
func (h *Handler) endSession(s *session) {
	s.release()
	s.gs.Close()
}

func (h *Handler) refuseSession(w http.ResponseWriter, m *wire.Message, why string) gateway.Reply {
	w.Header().Set("Retry-After", "10")
	e := wire.Errorf(wire.CodeInternalError, "%s", why)
	writeRPCError(w, http.StatusServiceUnavailable, m.ID, e)
	return gateway.Reply{Error: e.Marshal()}
}

// reserveReplay counts cost more replay bytes for session s, first
// dropping the oldest events its budget and the front's need dropped for
// them to fit (see ReplayBytes). Only when nothing more may be dropped
// (what is left is connected clients' queues) is a budget exceeded.
func (h *Handler) reserveReplay(s *session, cost int64) {
	reserve(&s.bytes, h.ReplayBytesPerSession, cost, func(n int64) int64 { return s.trim(n, limitSession) })
	reserve(&h.replayBytes, h.ReplayBytes, cost, func(n int64) int64 {
		// A little more than needed, so that a front at its budget does
		// not search for the heaviest session on every event.
		n += h.ReplayBytes / 32
		freed := int64(0)
		for _, v := range h.replayVictims() {
			if freed += v.trim(n-freed, limitTotal); freed >= n {
				break
			}
		}
		return freed
	})
	s.tenant.bytes.Add(cost)
}

// reserve adds cost to counter unless that takes it beyond limit (0: none):
// then it first has trim free the excess, and adds anyway when there is
// nothing left to free. Concurrent reservations never take it beyond limit
// together while there is something to free.
func reserve(counter *atomic.Int64, limit, cost int64, trim func(int64) int64) {
	for trims := 0; ; {
		cur := counter.Load()
		if limit <= 0 || cur+cost <= limit {
			if counter.CompareAndSwap(cur, cur+cost) {
				return
			}
			continue
		}
		if trims++; trims > 16 {
			break
		}
		if trim(cur+cost-limit) == 0 && counter.Load() == cur {
			break // nothing to drop, and nobody else dropped anything meanwhile
		}
	}
	counter.Add(cost)
}

// replayVictims lists the sessions holding replay bytes in the order the
// total budget takes from them: by tenant, the tenant holding the most
// first, and within it the session holding the most first.
func (h *Handler) replayVictims() []*session {
	h.mu.Lock()
	defer h.mu.Unlock()
	ts := make([]*tenant, 0, len(h.tenants))
	for _, t := range h.tenants {
		if t.bytes.Load() > 0 {
			ts = append(ts, t)
		}
	}
	slices.SortFunc(ts, func(a, b *tenant) int { return cmp.Compare(b.bytes.Load(), a.bytes.Load()) })
	var out []*session
	for _, t := range ts {
		start := len(out)
		for s := range t.members {
			if s.bytes.Load() > 0 {
				out = append(out, s)
			}
		}
		slices.SortFunc(out[start:], func(a, b *session) int { return cmp.Compare(b.bytes.Load(), a.bytes.Load()) })
	}
	return out
}

// ReplayBytesHeld is what the front's resumable streams hold for replay.
func (h *Handler) ReplayBytesHeld() int64 { return h.replayBytes.Load() }

// refuseGap answers a resume asking for events the replay budget dropped:
// 409, with a JSON-RPC error naming the limit and the oldest event kept
// (resuming from just before it accepts the gap).
func (h *Handler) refuseGap(w http.ResponseWriter, last, stream string, gap *replayGap) {
	var why string
	switch gap.limit {
	case limitStream:
		why = fmt.Sprintf("the replay budget of %d bytes per stream (%s)", h.ReplayBytesPerStream, flagPerStream)
	case limitSession:
		why = fmt.Sprintf("the replay budget of %d bytes per session (%s)", h.ReplayBytesPerSession, flagPerSession)
	case limitTotal:
		why = fmt.Sprintf("the gateway's replay budget of %d bytes (%s)", h.ReplayBytes, flagReplayTotal)
	default:
		why = fmt.Sprintf("the stream's replay buffer of %d messages", streamBuffer)
	}
	data, _ := json.Marshal(map[string]any{"lastEventId": last, "oldestKeptEventId": fmt.Sprintf("%s-%d", stream, gap.first), "limit": gap.limit})
	writeRPCError(w, http.StatusConflict, nil, &wire.Error{
		Code: wire.CodeInvalidRequest,
		Message: fmt.Sprintf("Last-Event-ID %q cannot be resumed: events after it were dropped by %s, so resuming would skip messages; "+
			"call again, or raise the limit (resuming from Last-Event-ID %s-%d accepts the gap)", last, why, stream, gap.first-1),
		Data: data,
	})
}
