package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-gateway/mcp-gateway/internal/wire"
)

// TestInputRequestsGathered: a session-era server that asks three
// questions at once during a 2026-07-28 client's call (as the Go SDK does
// for one round of input requests) is answered with one input-required
// result holding all three, even while another client's call on the same
// server waits for that client's answer; the retry must answer each, and
// each request gets its own answer.
func TestInputRequestsGathered(t *testing.T) {
	f := &scripted{fakeUpstream: fakeUpstream{name: "a", tools: []string{tool("ask3"), tool("ask1")}}}
	g := gatewayWith(t, RouterOptions{}, f)
	// A bound for a broken gateway, not a measure: the three requests are
	// sent at once, and the result waits this long after the last.
	g.Limits.InputGather = 500 * time.Millisecond
	hooks := hooksOf(g, "a")
	questions := []struct{ method, params string }{
		{"elicitation/create", `{"message":"name?","requestedSchema":{"type":"object"}}`},
		{"sampling/createMessage", `{"messages":[],"maxTokens":5}`},
		{"roots/list", `{}`},
	}
	f.handle = func(ctx context.Context, _ string, params json.RawMessage) (*wire.Response, error) {
		if name, _ := wire.GetString(params, "name"); name == "ask1" {
			res, werr := hooks.OnRequest(ctx, questions[0].method, json.RawMessage(questions[0].params))
			if werr != nil {
				return nil, werr
			}
			return &wire.Response{Result: json.RawMessage(`{"content":[{"type":"text","text":` + string(res) + `}]}`)}, nil
		}
		answers := make([]string, len(questions))
		var wg sync.WaitGroup
		for i, q := range questions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, werr := hooks.OnRequest(ctx, q.method, json.RawMessage(q.params))
				if werr != nil {
					answers[i] = q.method + " failed: " + werr.Message
					return
				}
				answers[i] = q.method + "=" + string(res)
			}()
		}
		wg.Wait()
		text, _ := json.Marshal(strings.Join(answers, "; "))
		return &wire.Response{Result: json.RawMessage(`{"content":[{"type":"text","text":` + string(text) + `}]}`)}, nil
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"sampling":{},"roots":{}}}`
	params := `{"name":"ask3","arguments":{},` + meta + `}`
	type inputRequired struct {
		InputRequests map[string]struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		RequestState string
	}
	ask := func() inputRequired {
		first := g.HandleStateless(context.Background(), msg(`1`, "tools/call", params), nil)
		var res inputRequired
		if err := json.Unmarshal(first.Result, &res); err != nil || string(wire.Get(first.Result, "resultType")) != `"input_required"` {
			t.Fatalf("first call: %s %s, want input_required", first.Result, first.Error)
		}
		var methods []string
		for _, r := range res.InputRequests {
			methods = append(methods, r.Method)
		}
		slices.Sort(methods)
		if !slices.Equal(methods, []string{"elicitation/create", "roots/list", "sampling/createMessage"}) {
			t.Fatalf("the input-required result asks %v, want the three questions together: %s", methods, first.Result)
		}
		return res
	}
	answerOf := map[string]string{
		"elicitation/create":     `{"action":"accept","content":{"name":"Ada"}}`,
		"sampling/createMessage": `{"role":"assistant","model":"m","content":{"type":"text","text":"hi"}}`,
		"roots/list":             `{"roots":[]}`,
	}
	retry := func(res inputRequired, skip string) Reply {
		var answers []string
		for key, r := range res.InputRequests {
			if r.Method != skip {
				answers = append(answers, `"`+key+`":`+answerOf[r.Method])
			}
		}
		p := strings.Replace(params, `"_meta"`, `"requestState":"`+res.RequestState+`","inputResponses":{`+strings.Join(answers, ",")+`},"_meta"`, 1)
		return g.HandleStateless(context.Background(), msg(`2`, "tools/call", p), nil)
	}

	// Another client's call, left waiting for its answer.
	other := strings.Replace(params, `"ask3"`, `"ask1"`, 1)
	other = strings.Replace(other, `"name":"m"`, `"name":"other"`, 1)
	if r := g.HandleStateless(context.Background(), msg(`9`, "tools/call", other), nil); string(wire.Get(r.Result, "resultType")) != `"input_required"` {
		t.Fatalf("the other client's call: %s %s, want input_required", r.Result, r.Error)
	}

	second := retry(ask(), "")
	want := `elicitation/create={"action":"accept","content":{"name":"Ada"}}; sampling/createMessage={"role":"assistant","model":"m","content":{"type":"text","text":"hi"}}; roots/list={"roots":[]}`
	var done struct{ Content []struct{ Text string } }
	if err := json.Unmarshal(second.Result, &done); second.Error != nil || err != nil || len(done.Content) != 1 || done.Content[0].Text != want {
		t.Errorf("the retry with the three answers: %s %s, want the text %q", second.Result, second.Error, want)
	}

	res := ask()
	var rootsKey string
	for key, r := range res.InputRequests {
		if r.Method == "roots/list" {
			rootsKey = key
		}
	}
	partial := retry(res, "roots/list")
	if wantErr := `{"code":-32602,"message":"inputResponses lacks \"` + rootsKey + `\", an answer the server is waiting for (the call is ended: send the request again without requestState)"}`; string(partial.Error) != wantErr {
		t.Errorf("a retry without the roots answer: %s %s, want the error %s", partial.Result, partial.Error, wantErr)
	}
}
