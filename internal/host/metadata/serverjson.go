package metadata

import (
	"cmp"
	"encoding/json"
	"strings"
)

// The server.json layout, as far as this package reads it. Fields ending in
// Old hold the snake_case spellings of registry entries published before the
// 2025-09 schema; the methods below prefer the current spelling.

type server struct {
	Name          string `json:"name"`
	Title         string `json:"title"`
	Description   string `json:"description"`
	Version       string `json:"version"`
	VersionDetail struct {
		Version string `json:"version"`
	} `json:"version_detail"`
	Packages []pkg    `json:"packages"`
	Remotes  []remote `json:"remotes"`
}

type remote struct {
	URL string `json:"url"`
}

type pkg struct {
	RegistryType    string `json:"registryType"`
	RegistryTypeOld string `json:"registry_type"`
	RegistryName    string `json:"registry_name"` // oldest spelling
	Identifier      string `json:"identifier"`
	NameOld         string `json:"name"` // oldest spelling of identifier
	Version         string `json:"version"`
	// RegistryBaseURL is where an OCI image lives when its identifier
	// names no registry ("https://ghcr.io"); npm and PyPI ones are informational.
	RegistryBaseURL    string `json:"registryBaseUrl"`
	RegistryBaseURLOld string `json:"registry_base_url"`
	// Transport is {"type": "stdio"}; some early entries have a bare string.
	Transport json.RawMessage `json:"transport"`

	RuntimeArguments        []argument `json:"runtimeArguments"`
	RuntimeArgumentsOld     []argument `json:"runtime_arguments"`
	PackageArguments        []argument `json:"packageArguments"`
	PackageArgumentsOld     []argument `json:"package_arguments"`
	EnvironmentVariables    []input    `json:"environmentVariables"`
	EnvironmentVariablesOld []input    `json:"environment_variables"`
}

func (p pkg) registryType() string {
	return strings.ToLower(cmp.Or(p.RegistryType, p.RegistryTypeOld, p.RegistryName))
}

func (p pkg) identifier() string { return cmp.Or(p.Identifier, p.NameOld) }

func (p pkg) registryBaseURL() string { return cmp.Or(p.RegistryBaseURL, p.RegistryBaseURLOld) }

// transport returns the transport type; none means stdio.
func (p pkg) transport() string {
	var t struct {
		Type    string `json:"type"`
		TypeOld string `json:"transport_type"`
	}
	if json.Unmarshal(p.Transport, &t) == nil && cmp.Or(t.Type, t.TypeOld) != "" {
		return cmp.Or(t.Type, t.TypeOld)
	}
	var s string
	if json.Unmarshal(p.Transport, &s) == nil && s != "" {
		return s
	}
	return "stdio"
}

func (p pkg) runtimeArguments() []argument {
	return either(p.RuntimeArguments, p.RuntimeArgumentsOld)
}

func (p pkg) packageArguments() []argument {
	return either(p.PackageArguments, p.PackageArgumentsOld)
}

func (p pkg) envVars() []input {
	return either(p.EnvironmentVariables, p.EnvironmentVariablesOld)
}

// input is an environment variable or the common part of an argument.
type input struct {
	Name          string `json:"name"`
	Description   string `json:"description"`
	Value         text   `json:"value"`
	Default       text   `json:"default"`
	IsRequired    bool   `json:"isRequired"`
	IsRequiredOld bool   `json:"is_required"`
	IsSecret      bool   `json:"isSecret"`
	IsSecretOld   bool   `json:"is_secret"`
}

func (in input) required() bool { return in.IsRequired || in.IsRequiredOld }
func (in input) secret() bool   { return in.IsSecret || in.IsSecretOld }

type argument struct {
	input
	Type         string `json:"type"`
	ValueHint    string `json:"valueHint"`
	ValueHintOld string `json:"value_hint"`
}

func (a argument) valueHint() string { return cmp.Or(a.ValueHint, a.ValueHintOld) }

func either[T any](current, old []T) []T {
	if len(current) > 0 {
		return current
	}
	return old
}
