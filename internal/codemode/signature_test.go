package codemode

import (
	"encoding/json"
	"testing"
)

func TestSignatures(t *testing.T) {
	def := json.RawMessage(`{"name":"create_entities","description":"Create multiple new entities\nin the graph","inputSchema":{"type":"object","properties":{
		"entities":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"observations":{"type":"array","items":{"type":"string"}},"entityType":{"type":"string"}},"required":["name","entityType"]}},
		"mode":{"enum":["fast","slow"]},"n":{"type":["integer","null"]},"tags":{"type":"object","additionalProperties":{"type":"string"}}},"required":["entities"]},
		"outputSchema":{"type":"object","properties":{"entities":{"type":"array","items":{"type":"object"}}}}}`)
	got := Tool{Server: "memory", Name: "create_entities", Def: def}.Signature()
	want := "// Create multiple new entities\n" +
		`servers.memory.create_entities(args: {entities: {name: string, entityType: string, observations?: string[]}[], mode?: "fast" | "slow", n?: number | null, tags?: {[key: string]: string}}): Promise<{entities?: object[]}>`
	if got != want {
		t.Errorf("signature\n%s\nwant\n%s", got, want)
	}
	if got, want := (Tool{Server: "my-server", Name: "get-sum"}).Call(), `servers["my-server"]["get-sum"]`; got != want {
		t.Errorf("call %s, want %s", got, want)
	}
}
