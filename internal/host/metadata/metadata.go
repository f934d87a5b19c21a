package metadata

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Spec is a server from the registry, reduced to what host mode needs to
// register and start it.
type Spec struct {
	Name        string // registry name, e.g. "io.github.user/weather"
	Title       string
	Description string
	Version     string
	// Package is the registry and package spec that runs, e.g.
	// "npm @scope/pkg@1.2.3", "pypi weather-mcp==0.5.0" or
	// "oci ghcr.io/acme/weather:1.0.0".
	Package string
	Command string // "npx", "uvx" or "docker"
	// Args are the command's arguments; for an OCI package, docker run's
	// with the default isolation settings (see [Docker]).
	Args []string
	// OCI is set for an OCI package: what [Docker.Args] needs to build
	// docker run's arguments with other settings or more variables.
	OCI *OCI
	// Env is the environment of the process: fixed values and defaults
	// of the entry, and "${name}" placeholders for the secrets.
	Env map[string]string
	// Config lists the non-secret environment variables that the user may
	// set, in the entry's order.
	Config []Property
	// Secrets names the secrets the server needs (the lowercased variable
	// names, "api_key" for API_KEY), in the entry's order.
	Secrets []string
	// Remotes lists the URLs of the remote endpoints the entry also
	// declares; informational.
	Remotes []string
}

// Property is a setting of a server, passed to it as an environment
// variable.
type Property struct {
	Name        string // Env lowercased: "log_level"
	Description string
	Env         string // "LOG_LEVEL"
	Default     string
	Required    bool
}

// Parse reads a server.json (or the same as YAML, a server.yaml), a
// registry entry wrapping one, or a registry list response holding exactly
// one, and returns how to run the server.
func Parse(data []byte) (*Spec, error) {
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] != '{' {
		converted, ok, err := yamlToJSON(data)
		if err != nil {
			return nil, err
		}
		if ok {
			data = converted
		}
	}
	raw, err := unwrap(data)
	if err != nil {
		return nil, err
	}
	var s server
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("metadata: not a server.json: %s", jsonProblem(err))
	}
	if s.Name == "" {
		return nil, errors.New(`metadata: the entry has no "name": expected a server.json, or a registry entry {"server": {...}}`)
	}
	spec := &Spec{
		Name:        s.Name,
		Title:       s.Title,
		Description: s.Description,
		Version:     cmp.Or(s.Version, s.VersionDetail.Version),
		Env:         map[string]string{},
	}
	for _, r := range s.Remotes {
		if r.URL != "" {
			spec.Remotes = append(spec.Remotes, r.URL)
		}
	}
	p, err := choosePackage(s.Name, s.Packages, spec.Remotes)
	if err != nil {
		return nil, err
	}
	if err := spec.command(p); err != nil {
		return nil, fmt.Errorf("mcp server %q: %w", s.Name, err)
	}
	if err := spec.environment(p.envVars()); err != nil {
		return nil, fmt.Errorf("mcp server %q: package %s: %w", s.Name, spec.Package, err)
	}
	if spec.OCI != nil {
		if spec.Args, err = (Docker{}).Args(spec.OCI, spec.EnvNames()); err != nil {
			return nil, fmt.Errorf("mcp server %q: package %s: %w", s.Name, spec.Package, err)
		}
	}
	return spec, nil
}

// unwrap returns the server.json inside a registry entry or list response.
func unwrap(data []byte) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("metadata: not a server.json or registry entry (a JSON object): %v", err)
	}
	if list, ok := top["servers"]; ok {
		var servers []json.RawMessage
		if err := json.Unmarshal(list, &servers); err != nil {
			return nil, fmt.Errorf(`metadata: "servers" is not a list: %v`, err)
		}
		if len(servers) != 1 {
			return nil, fmt.Errorf(`metadata: the registry response lists %d servers, expected exactly one: pass the entry of the server to register`, len(servers))
		}
		data, top = servers[0], nil
		if err := json.Unmarshal(data, &top); err != nil {
			return nil, fmt.Errorf("metadata: servers[0] is not a JSON object: %v", err)
		}
	}
	if inner, ok := top["server"]; ok && top["name"] == nil {
		return inner, nil
	}
	return data, nil
}

// choosePackage returns the first package runnable over stdio through npm
// or PyPI, else the first OCI image over stdio (run with Docker): an entry
// offering both keeps running as it did before OCI images were supported.
func choosePackage(name string, packages []pkg, remotes []string) (pkg, error) {
	var found []string
	for _, p := range packages {
		typ, transport := p.registryType(), p.transport()
		if (typ == "npm" || typ == "pypi") && transport == "stdio" {
			return p, nil
		}
		found = append(found, fmt.Sprintf("%s over %s", cmp.Or(typ, "unknown registry"), transport))
	}
	for _, p := range packages {
		if typ := p.registryType(); (typ == "oci" || typ == "docker") && p.transport() == "stdio" {
			return p, nil
		}
	}
	msg := fmt.Sprintf("mcp server %q: no package runs over stdio through npm, PyPI or OCI", name)
	if len(found) > 0 {
		msg += " (it has " + strings.Join(found, ", ") + ")"
	} else {
		msg += " (it lists no packages)"
	}
	if len(remotes) > 0 {
		msg += fmt.Sprintf("; it is served remotely at %s: register its remote with --url instead", strings.Join(remotes, ", "))
	} else {
		msg += "; host mode runs only npm packages (with npx), PyPI packages (with uvx) and OCI images (with docker run) over stdio"
	}
	return pkg{}, errors.New(msg)
}

// command sets Package, Command and Args for p.
func (spec *Spec) command(p pkg) error {
	id, version := p.identifier(), p.Version
	if id == "" {
		return fmt.Errorf("its %s package has no identifier", p.registryType())
	}
	if version == "latest" {
		version = ""
	}
	runtimeArgs, err := argv(p.runtimeArguments())
	if err != nil {
		return fmt.Errorf("package %s: runtime arguments: %w", id, err)
	}
	packageArgs, err := argv(p.packageArguments())
	if err != nil {
		return fmt.Errorf("package %s: package arguments: %w", id, err)
	}

	pkgSpec := id
	switch p.registryType() {
	case "oci", "docker":
		image, err := imageRef(id, version, p.registryBaseURL())
		if err != nil {
			return err
		}
		spec.Command, spec.Package = "docker", "oci "+image
		spec.OCI = &OCI{Image: image, RuntimeArgs: runtimeArgs, PackageArgs: packageArgs}
		if err := spec.OCI.checkRuntimeArgs(); err != nil {
			return fmt.Errorf("package %s: %w", spec.Package, err)
		}
		return nil
	case "npm":
		if version != "" {
			pkgSpec += "@" + version
		}
		spec.Command = "npx"
		spec.Args = append([]string{"-y"}, runtimeArgs...)
	case "pypi":
		if version != "" {
			pkgSpec += "==" + version
		}
		spec.Command = "uvx"
		spec.Args = runtimeArgs
	}
	spec.Package = p.registryType() + " " + pkgSpec
	spec.Args = append(append(spec.Args, pkgSpec), packageArgs...)
	return nil
}

// argv renders registry arguments as command-line words:
//
//   - positional: its value, else its default, else "{valueHint}" (the
//     hint is a label, not part of the command line, so it stays a visible
//     placeholder);
//   - named: the flag, then its value (or default) as the next word, as the
//     schema describes "--flag {value}"; a named argument with neither is
//     left out when optional, and given a "{flag}" placeholder when
//     required.
//
// {placeholders} inside values are kept as they are.
func argv(args []argument) ([]string, error) {
	var words []string
	for i, a := range args {
		value := cmp.Or(a.Value.String(), a.Default.String())
		switch a.Type {
		case "positional", "":
			switch hint := a.valueHint(); {
			case value != "":
				words = append(words, value)
			case hint != "":
				words = append(words, "{"+hint+"}")
			default:
				return nil, fmt.Errorf("argument %d is positional with neither value nor valueHint", i)
			}
		case "named":
			if a.Name == "" {
				return nil, fmt.Errorf("argument %d is named but has no name", i)
			}
			switch {
			case value != "":
				words = append(words, a.Name, value)
			case a.required():
				words = append(words, a.Name, "{"+strings.TrimLeft(a.Name, "-")+"}")
			}
		default:
			return nil, fmt.Errorf("argument %d has type %q, expected positional or named", i, a.Type)
		}
	}
	return words, nil
}

// environment fills Env, Config and Secrets from the package's environment
// variables.
func (spec *Spec) environment(vars []input) error {
	for i, v := range vars {
		if !validEnvName(v.Name) {
			return fmt.Errorf("environment variable %d: %q is not a variable name (letters, digits and '_', not starting with a digit)", i, v.Name)
		}
		name := strings.ToLower(v.Name)
		switch {
		case v.secret():
			spec.Secrets = append(spec.Secrets, name)
			spec.Env[v.Name] = "${" + name + "}"
		case v.Value.String() != "":
			// A fixed value "should not be configurable by end users".
			spec.Env[v.Name] = v.Value.String()
		default:
			spec.Config = append(spec.Config, Property{
				Name:        name,
				Description: v.Description,
				Env:         v.Name,
				Default:     v.Default.String(),
				Required:    v.required(),
			})
			if d := v.Default.String(); d != "" {
				spec.Env[v.Name] = d
			}
		}
	}
	return nil
}

// jsonProblem says what is wrong in a server.json in its own terms, not in
// those of this package's Go types.
func jsonProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return fmt.Sprintf("field %q holds a JSON %s, which is not what the schema allows there", typeErr.Field, typeErr.Value)
	}
	return err.Error()
}

func validEnvName(name string) bool {
	if name == "" || ('0' <= name[0] && name[0] <= '9') {
		return false
	}
	for _, r := range name {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// text is a string field that registry entries sometimes spell as a number
// or a boolean ("default": 8080).
type text string

func (t *text) UnmarshalJSON(data []byte) error {
	if bytes.Equal(data, []byte("null")) {
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*t = text(s)
		return nil
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	switch v.(type) {
	case float64, bool:
		*t = text(data)
		return nil
	}
	return fmt.Errorf("expected a string, got %s", data)
}

func (t text) String() string { return string(t) }
