package metadata_test

import (
	"fmt"

	"github.com/mcp-gateway/mcp-gateway/internal/host/metadata"
)

func ExampleParse() {
	spec, err := metadata.Parse([]byte(`{
	  "name": "io.modelcontextprotocol/brave-search",
	  "description": "Web search with the Brave Search API",
	  "version": "1.0.2",
	  "packages": [{
	    "registryType": "npm",
	    "identifier": "@modelcontextprotocol/server-brave-search",
	    "version": "1.0.2",
	    "transport": {"type": "stdio"},
	    "environmentVariables": [
	      {"name": "BRAVE_API_KEY", "isRequired": true, "isSecret": true}
	    ]
	  }]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(spec.Command, spec.Args)
	fmt.Println(spec.Secrets, spec.Env)
	// Output:
	// npx [-y @modelcontextprotocol/server-brave-search@1.0.2]
	// [brave_api_key] map[BRAVE_API_KEY:${brave_api_key}]
}
