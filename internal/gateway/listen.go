package gateway

import (
	"context"
	"encoding/json"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// listenFilter is the notifications filter of subscriptions/listen.
type listenFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// Listen serves subscriptions/listen, the 2026-07-28 stream of change
// notifications: it acknowledges the filter the gateway honours, then sends
// the notifications the client opted in to, each carrying the
// subscription's id, until the client closes the stream (ctx) or the
// gateway shuts down (then it answers, which ends the subscription gracefully).
func (g *Gateway) Listen(ctx context.Context, m *wire.Message, stream Stream) Reply {
	var want listenFilter
	if raw := wire.Get(m.Params, "notifications"); raw != nil {
		if err := json.Unmarshal(raw, &want); err != nil {
			return errorReply(wire.Errorf(wire.CodeInvalidParams, "subscriptions/listen: malformed notifications filter: %v", err))
		}
	}
	s := g.statelessSession(m.Params)
	s.out = make(chan []byte, outboxSize)
	g.clients.add(s)
	defer s.Close()

	agreed := want
	agreed.ResourceSubscriptions = nil
	for _, uri := range want.ResourceSubscriptions {
		p := wire.AppendString([]byte(`{"uri":`), uri)
		p = append(p, '}')
		if r := g.subscribe(ctx, s, p, nil, nil); r.Error == nil {
			agreed.ResourceSubscriptions = append(agreed.ResourceSubscriptions, uri)
		}
	}
	meta := json.RawMessage(`{"` + MetaSubscriptionID + `":` + string(m.ID) + `}`)
	ack, _ := json.Marshal(map[string]any{"_meta": meta, "notifications": agreed})
	if err := stream.Send(wire.AppendNotification(nil, "notifications/subscriptions/acknowledged", ack)); err != nil {
		return errorReply(wire.Errorf(wire.CodeInternalError, "subscriptions/listen: %v", err))
	}
	for {
		select {
		case <-ctx.Done():
			return Reply{}
		case <-g.closing:
			return Reply{Result: json.RawMessage(`{"resultType":"complete","_meta":` + string(meta) + `}`)}
		case msg := <-s.out:
			out, ok := want.pass(msg, meta)
			if !ok {
				continue
			}
			if err := stream.Send(out); err != nil {
				return Reply{}
			}
		}
	}
}

// pass reports whether a notification is one the filter asked for, and
// returns it with the subscription's id in its _meta.
func (f *listenFilter) pass(msg []byte, meta json.RawMessage) ([]byte, bool) {
	m, err := wire.Parse(msg)
	if err != nil {
		return nil, false
	}
	switch m.Method {
	case "notifications/tools/list_changed":
		if !f.ToolsListChanged {
			return nil, false
		}
	case "notifications/prompts/list_changed":
		if !f.PromptsListChanged {
			return nil, false
		}
	case "notifications/resources/list_changed":
		if !f.ResourcesListChanged {
			return nil, false
		}
	case "notifications/resources/updated":
		// Only subscribed URIs reach this session.
	default:
		return nil, false
	}
	params, err := wire.Set(m.Params, "_meta", meta)
	if err != nil {
		return nil, false
	}
	return wire.AppendNotification(nil, m.Method, params), true
}
