module github.com/mcp-gateway/mcp-gateway

go 1.26.8

require github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
