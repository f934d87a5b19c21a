package metadata

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// OCI is a server published as an OCI image that speaks stdio.
type OCI struct {
	Image       string   // the image reference docker runs, e.g. "ghcr.io/acme/weather:1.0.0"
	RuntimeArgs []string // the entry's runtime arguments: docker run options before the image
	PackageArgs []string // the entry's package arguments: the container's arguments after the image
}

// Docker holds the isolation settings of `docker run` for an OCI package.
// The zero value is the default: no network, 512 MiB of memory, one CPU,
// 256 processes, no capabilities, no privilege gain, no pull.
type Docker struct {
	Network string `json:"network,omitempty"` // --network; default "none"
	Memory  string `json:"memory,omitempty"`  // --memory; default "512m"
	CPUs    string `json:"cpus,omitempty"`    // --cpus; default "1"
	Pids    int    `json:"pids,omitempty"`    // --pids-limit; default 256
	Pull    string `json:"pull,omitempty"`    // --pull: never (default), missing or always
}

// Default isolation settings of an OCI package's container.
const (
	DefaultDockerNetwork = "none"
	DefaultDockerMemory  = "512m"
	DefaultDockerCPUs    = "1"
	DefaultDockerPids    = 256
	DefaultDockerPull    = "never"
)

var (
	dockerNameRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]*$`)
	dockerMemoryRE = regexp.MustCompile(`^[0-9]+[bkmgBKMG]?$`)
	dockerCPUsRE   = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
)

// Check reports the first setting docker run would not accept, naming the
// flag of `server add` that sets it.
func (d Docker) Check() error {
	switch {
	case d.Network != "" && !dockerNameRE.MatchString(d.Network):
		return fmt.Errorf("--docker-network %q: name a Docker network (none, bridge, host or one of `docker network ls`)", d.Network)
	case d.Memory != "" && !dockerMemoryRE.MatchString(d.Memory):
		return fmt.Errorf("--docker-memory %q: write a size such as 512m or 2g", d.Memory)
	case d.CPUs != "" && (!dockerCPUsRE.MatchString(d.CPUs) || d.CPUs == "0" || strings.Trim(d.CPUs, "0.") == ""):
		return fmt.Errorf("--docker-cpus %q: write a number of CPUs above zero such as 1 or 0.5", d.CPUs)
	case d.Pids < 0:
		return fmt.Errorf("--docker-pids %d: write a number of processes above zero", d.Pids)
	}
	switch d.Pull {
	case "", "never", "missing", "always":
	default:
		return fmt.Errorf("--docker-pull %q: write never, missing or always", d.Pull)
	}
	return nil
}

// Args returns docker's arguments running o: `run -i --rm`, the isolation
// settings, `-e NAME` for each variable in env (docker takes the value from
// its own environment, so a secret's value never sits on a command line),
// the entry's runtime arguments, the image and the package arguments.
func (d Docker) Args(o *OCI, env []string) ([]string, error) {
	if err := d.Check(); err != nil {
		return nil, err
	}
	if err := o.checkRuntimeArgs(); err != nil {
		return nil, err
	}
	args := []string{"run", "-i", "--rm", "--init",
		"--network", cmp.Or(d.Network, DefaultDockerNetwork),
		"--memory", cmp.Or(d.Memory, DefaultDockerMemory),
		"--cpus", cmp.Or(d.CPUs, DefaultDockerCPUs),
		"--pids-limit", strconv.Itoa(cmp.Or(d.Pids, DefaultDockerPids)),
		"--cap-drop", "ALL",
		"--security-opt", "no-new-privileges",
		"--pull", cmp.Or(d.Pull, DefaultDockerPull),
	}
	for _, name := range env {
		if !validEnvName(name) {
			return nil, fmt.Errorf("environment variable %q is not a variable name", name)
		}
		args = append(args, "-e", name)
	}
	args = append(args, o.RuntimeArgs...)
	args = append(args, o.Image)
	return append(args, o.PackageArgs...), nil
}

// EnvNames lists the variables of the spec's environment and configuration,
// sorted: those an OCI package's container is given.
func (spec *Spec) EnvNames() []string {
	var names []string
	for k := range spec.Env {
		names = append(names, k)
	}
	for _, p := range spec.Config {
		names = append(names, p.Env)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// isolationFlags are docker run options that would loosen or replace the
// isolation host mode sets (or reach into the host), so registry metadata
// may not choose them.
var isolationFlags = []string{
	"--privileged", "--cap-add", "--security-opt", "--network", "--net", "--network-alias",
	"--pid", "--ipc", "--uts", "--userns", "--cgroupns", "--cgroup-parent", "--device",
	"--device-cgroup-rule", "-v", "--volume", "--volumes-from", "--mount", "--tmpfs",
	"-m", "--memory", "--memory-swap", "--cpus", "--pids-limit", "--ulimit", "--pull",
	"-p", "--publish", "-P", "--publish-all", "--runtime", "--add-host", "--dns",
	"--env-file", "--cidfile", "--sysctl", "--gpus", "--group-add", "--oom-kill-disable",
}

// shortFlag returns the refused one-letter flag in a word of one-letter
// flags glued together ("-v/a:/b", "-iP"), or "". Docker's boolean short
// flags may be followed by more flags; any other letter takes the rest of
// the word as its value.
func shortFlag(w string) string {
	if len(w) < 2 || w[0] != '-' || w[1] == '-' {
		return ""
	}
	for _, c := range w[1:] {
		switch {
		case strings.ContainsRune("vmpP", c):
			return "-" + string(c)
		case !strings.ContainsRune("itd", c):
			return "" // a flag taking the rest as its value
		}
	}
	return ""
}

func (o *OCI) checkRuntimeArgs() error {
	for _, w := range o.RuntimeArgs {
		flag, _, _ := strings.Cut(w, "=")
		if f := shortFlag(w); f != "" {
			flag = f
		}
		if slices.Contains(isolationFlags, flag) {
			return fmt.Errorf("its runtime arguments ask for docker run %s, which host mode does not let registry metadata choose: "+
				"use server add's --docker-* flags, or register the image with --command docker --args run,-i,--rm,... to run it your way", flag)
		}
	}
	return nil
}

// imageRef builds the image reference of an OCI package: the identifier,
// its version as the tag when the identifier has no tag or digest, and the
// registry of registryBaseURL when the identifier names none.
func imageRef(id, version, base string) (string, error) {
	if strings.HasPrefix(id, "-") || strings.ContainsAny(id, " \t\r\n") {
		return "", fmt.Errorf("its oci package's identifier %q is not an image reference", id)
	}
	last := id[strings.LastIndex(id, "/")+1:]
	if version != "" && !strings.Contains(id, "@") && !strings.Contains(last, ":") {
		id += ":" + version
	}
	if base == "" {
		return id, nil
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "", errors.New("its oci package's registryBaseUrl " + strconv.Quote(base) + " is not a URL")
	}
	switch u.Host {
	case "docker.io", "registry-1.docker.io", "index.docker.io", "registry.hub.docker.com":
		return id, nil
	}
	first, _, hasSlash := strings.Cut(id, "/")
	if hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return id, nil // the identifier names its registry
	}
	return u.Host + "/" + id, nil
}
