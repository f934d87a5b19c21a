package main

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// codeUnsupportedProtocolVersion is the error a server of the session era
// answers a 2026-07-28 request with.
const codeUnsupportedProtocolVersion = -32022

// clientMeta is the _meta a 2026-07-28 request carries instead of a session.
const clientMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"mcp-gateway-bench","version":"1"},` +
	`"io.modelcontextprotocol/clientCapabilities":{}}`

// session is one client session as the load client sees it: in the legacy
// era an Mcp-Session-Id from initialize, in the 2026-07-28 era only headers.
// Any connection to the endpoint may carry it.
type session struct {
	era         string
	id          string // Mcp-Session-Id; "" in the 2026-07-28 era
	headers     string // header lines of every request
	callHeaders string // header lines of a tools/call of echo
}

// openSession starts a session: initialize and notifications/initialized in
// the legacy era, nothing on the wire in the 2026-07-28 era.
func openSession(c *httpConn, era string) (*session, error) {
	return openSessionAs(c, era, "mcp-gateway-bench")
}

// openSessionAs is openSession for the client named client (its
// clientInfo.name: the gateway's tenant in serve mode).
func openSessionAs(c *httpConn, era, client string) (*session, error) {
	if era == eraModern {
		h := "Mcp-Protocol-Version: " + eraModern + "\r\n"
		return &session{era: era, headers: h, callHeaders: h + "Mcp-Method: tools/call\r\nMcp-Name: echo\r\n"}, nil
	}
	initialize := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + eraLegacy +
		`","capabilities":{},"clientInfo":{"name":` + strconv.Quote(client) + `,"version":"1"}}}`
	r, err := c.do("POST", "", []byte(initialize))
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	msg, err := rpcMessage(r)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if msg.Error != nil {
		return nil, fmt.Errorf("initialize: %w", msg.Error)
	}
	if r.status != 200 || r.sessionID == "" {
		return nil, fmt.Errorf("initialize: HTTP %d, Mcp-Session-Id %q: want 200 and a session", r.status, r.sessionID)
	}
	h := "Mcp-Session-Id: " + r.sessionID + "\r\nMcp-Protocol-Version: " + eraLegacy + "\r\n"
	s := &session{era: era, id: r.sessionID, headers: h, callHeaders: h}
	r, err = c.do("POST", s.headers, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	if r.status != 202 && r.status != 200 && r.status != 204 {
		return nil, fmt.Errorf("notifications/initialized: HTTP %d: %.200q", r.status, r.body)
	}
	return s, nil
}

// close ends a legacy session with DELETE.
func (s *session) close(c *httpConn) error {
	if s.era == eraModern {
		return nil
	}
	r, err := c.do("DELETE", s.headers, nil)
	if err != nil {
		return fmt.Errorf("DELETE session: %w", err)
	}
	if r.status != 200 && r.status != 204 && r.status != 202 {
		return fmt.Errorf("DELETE session: HTTP %d: %.200q", r.status, r.body)
	}
	return nil
}

// echoBody renders a tools/call of echo with the text "c<id>".
func echoBody(b []byte, s *session, id int64) []byte {
	b = append(b[:0], `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"c`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `"}`...)
	if s.era == eraModern {
		b = append(b, ',')
		b = append(b, clientMeta...)
	}
	return append(b, "}}"...)
}

// echoResult is what a tools/call of echo must return.
type echoResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

// checkEcho checks the response to echoBody(id): status 200, the same id,
// no error, and the text echoed.
func checkEcho(r httpResponse, id int64) error {
	msg, err := rpcMessage(r)
	if err != nil {
		return err
	}
	if msg.Error != nil {
		return msg.Error
	}
	if r.status != 200 {
		return fmt.Errorf("HTTP %d: %.200q", r.status, r.body)
	}
	if string(msg.ID) != strconv.FormatInt(id, 10) {
		return fmt.Errorf("response id %s to request %d", msg.ID, id)
	}
	var res echoResult
	if err := json.Unmarshal(msg.Result, &res); err != nil {
		return fmt.Errorf("malformed tools/call result %.200q: %w", msg.Result, err)
	}
	want := "c" + strconv.FormatInt(id, 10)
	if res.IsError || len(res.Content) != 1 || res.Content[0].Type != "text" || res.Content[0].Text != want {
		return fmt.Errorf("tools/call echo %q answered %.200s", want, msg.Result)
	}
	return nil
}

// callEcho calls echo once; buf is the caller's reusable request buffer.
func callEcho(c *httpConn, s *session, id int64, buf *[]byte) error {
	*buf = echoBody(*buf, s, id)
	r, err := c.do("POST", s.callHeaders, *buf)
	if err != nil {
		return err
	}
	return checkEcho(r, id)
}

// listBody renders a tools/list request for one page.
func listBody(s *session, id int64, cursor string) []byte {
	b := []byte(`{"jsonrpc":"2.0","id":`)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"tools/list","params":{`...)
	if cursor != "" {
		c, _ := json.Marshal(cursor)
		b = append(b, `"cursor":`...)
		b = append(b, c...)
	}
	if s.era == eraModern {
		if cursor != "" {
			b = append(b, ',')
		}
		b = append(b, clientMeta...)
	}
	return append(b, "}}"...)
}

// listPage is one page of tools/list.
type listPage struct {
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	NextCursor string `json:"nextCursor"`
}

func decodeListPage(r httpResponse) (*listPage, error) {
	msg, err := rpcMessage(r)
	if err != nil {
		return nil, err
	}
	if msg.Error != nil {
		return nil, msg.Error
	}
	var p listPage
	if err := json.Unmarshal(msg.Result, &p); err != nil {
		return nil, fmt.Errorf("malformed tools/list result: %w", err)
	}
	return &p, nil
}

// listHeaders are the header lines of a tools/list.
func (s *session) listHeaders() string {
	if s.era == eraModern {
		return s.headers + "Mcp-Method: tools/list\r\n"
	}
	return s.headers
}
