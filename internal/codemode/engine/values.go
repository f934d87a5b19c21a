package engine

import (
	"encoding/json"
	"strings"
)

// deniedMeta is the _meta key of a result the gateway's policy refused
// (gateway.DeniedMeta).
const deniedMeta = "io.github.mcp-gateway/denied"

// innerValue is an inner call's result as the program sees it.
type innerValue struct {
	value   json.RawMessage // the value (JSON): structuredContent, else the content
	text    string          // the text content, joined: an error's message
	isError bool
	denied  json.RawMessage // the refusal (a JSON-RPC error object); nil when not refused

	deniedCode, deniedPolicies json.RawMessage
}

// valueOf turns a CallToolResult into the program's value: its
// structuredContent as an object when it has one; else its content, each
// text as a string, an image or audio as a descriptor
// ({type, mimeType, bytes}, without its data), an embedded resource as
// {type, uri, mimeType, text} (a blob as its size), other items as sent;
// one item as itself, none as null, more as an array.
func valueOf(result json.RawMessage) (innerValue, error) {
	var r struct {
		Content    []json.RawMessage          `json:"content"`
		Structured json.RawMessage            `json:"structuredContent"`
		IsError    bool                       `json:"isError"`
		Meta       map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return innerValue{}, err
	}
	v := innerValue{isError: r.IsError}
	var texts []string
	items := make([]json.RawMessage, 0, len(r.Content))
	for _, raw := range r.Content {
		item, text := contentValue(raw)
		items = append(items, item)
		if text != "" {
			texts = append(texts, text)
		}
	}
	v.text = strings.Join(texts, "\n")
	switch {
	case len(r.Structured) > 0 && string(r.Structured) != "null":
		v.value = r.Structured
	case len(items) == 0:
		v.value = json.RawMessage("null")
	case len(items) == 1:
		v.value = items[0]
	default:
		v.value, _ = json.Marshal(items)
	}
	if d := r.Meta[deniedMeta]; r.IsError && d != nil {
		v.denied = d
		var e struct {
			Code    json.RawMessage `json:"code"`
			Message string          `json:"message"`
			Data    struct {
				Policies json.RawMessage `json:"policies"`
			} `json:"data"`
		}
		_ = json.Unmarshal(d, &e)
		v.deniedCode, v.deniedPolicies = e.Code, e.Data.Policies
		if e.Message != "" {
			v.text = e.Message
		}
	}
	return v, nil
}

// contentValue is one content item as the program sees it, and its text.
func contentValue(raw json.RawMessage) (json.RawMessage, string) {
	var c struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MimeType string `json:"mimeType"`
		Resource *struct {
			URI      string  `json:"uri"`
			MimeType string  `json:"mimeType"`
			Text     *string `json:"text"`
			Blob     string  `json:"blob"`
		} `json:"resource"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return raw, ""
	}
	switch c.Type {
	case "text":
		b, _ := json.Marshal(c.Text)
		return b, c.Text
	case "image", "audio":
		b, _ := json.Marshal(map[string]any{"type": c.Type, "mimeType": c.MimeType, "bytes": base64Len(c.Data)})
		return b, ""
	case "resource":
		if c.Resource == nil {
			return raw, ""
		}
		d := map[string]any{"type": "resource", "uri": c.Resource.URI, "mimeType": c.Resource.MimeType}
		if c.Resource.Text != nil {
			d["text"] = *c.Resource.Text
		} else {
			d["bytes"] = base64Len(c.Resource.Blob)
		}
		b, _ := json.Marshal(d)
		return b, ""
	}
	return raw, ""
}

// base64Len is the decoded length of standard base64 data.
func base64Len(s string) int {
	n := len(s) / 4 * 3
	switch {
	case strings.HasSuffix(s, "=="):
		n -= 2
	case strings.HasSuffix(s, "="):
		n--
	}
	return n
}
