package main

// Checks of docker-compose.yml and the Dockerfile against the binary itself.
//
// There is no Docker engine in CI, so these files are otherwise only ever
// tested by someone deploying them. The checks here catch what would break
// such a deployment at start-up: a subcommand or flag that does not exist, a
// FRESHCRAWL_ variable the binary rejects (config.Resolve refuses unknown
// ones) or cannot parse, an undeclared volume, a dangling depends_on, a NATS
// node missing from the routes, a worker that cannot be scaled, an
// ENTRYPOINT that is not the binary the Dockerfile builds.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/freshcrawl/freshcrawl/config"
	"github.com/freshcrawl/freshcrawl/internal/broker"
	"github.com/freshcrawl/freshcrawl/internal/testutil"
)

// repoRoot is the repository root seen from this package's directory, where
// `go test` runs.
const repoRoot = "../.."

// natsServices are the NATS cluster nodes docker-compose.yml must define.
var natsServices = []string{"nats-1", "nats-2", "nats-3"}

// composeFile is the part of the Compose specification these checks read.
// Fields that the specification allows in several shapes (short and long
// syntax) are kept as yaml.Node and normalised by the helpers below.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image         string      `yaml:"image"`
	Build         yaml.Node   `yaml:"build"`
	Command       yaml.Node   `yaml:"command"`
	Environment   yaml.Node   `yaml:"environment"`
	ContainerName string      `yaml:"container_name"`
	Ports         []yaml.Node `yaml:"ports"`
	Volumes       []yaml.Node `yaml:"volumes"`
	DependsOn     yaml.Node   `yaml:"depends_on"`
	Healthcheck   *struct {
		Test    yaml.Node `yaml:"test"`
		Disable bool      `yaml:"disable"`
	} `yaml:"healthcheck"`
	Deploy struct {
		Replicas *int `yaml:"replicas"`
	} `yaml:"deploy"`
	StopGracePeriod string `yaml:"stop_grace_period"`
}

// composeTopLevelKeys and composeServiceKeys are the keys the Compose
// specification defines (extension keys x-* are allowed anywhere). Docker
// Compose rejects any other key; without an engine here, this test does.
var (
	composeTopLevelKeys = []string{"name", "services", "networks", "volumes", "configs", "secrets", "include", "models"}
	composeServiceKeys  = []string{
		"annotations", "attach", "blkio_config", "build", "cap_add", "cap_drop", "cgroup", "cgroup_parent",
		"command", "configs", "container_name", "cpu_count", "cpu_percent", "cpu_period", "cpu_quota",
		"cpu_rt_period", "cpu_rt_runtime", "cpu_shares", "cpus", "cpuset", "credential_spec", "depends_on",
		"deploy", "develop", "device_cgroup_rules", "devices", "dns", "dns_opt", "dns_search", "domainname",
		"driver_opts", "entrypoint", "env_file", "environment", "expose", "extends", "external_links",
		"extra_hosts", "gpus", "group_add", "healthcheck", "hostname", "image", "init", "ipc", "isolation",
		"label_file", "labels", "links", "logging", "mac_address", "mem_limit", "mem_reservation",
		"mem_swappiness", "memswap_limit", "models", "network_mode", "networks", "oom_kill_disable",
		"oom_score_adj", "pid", "pids_limit", "platform", "ports", "post_start", "pre_stop", "privileged",
		"profiles", "provider", "pull_policy", "read_only", "restart", "runtime", "scale", "secrets",
		"security_opt", "shm_size", "stdin_open", "stop_grace_period", "stop_signal", "storage_opt",
		"sysctls", "tmpfs", "tty", "ulimits", "use_api_socket", "user", "userns_mode", "uts", "volumes",
		"volumes_from", "working_dir",
	}
)

// readCompose returns the bytes of docker-compose.yml.
func readCompose(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return b
}

// loadCompose reads and decodes docker-compose.yml.
func loadCompose(t *testing.T) composeFile {
	t.Helper()
	var cf composeFile
	if err := yaml.Unmarshal(readCompose(t), &cf); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return cf
}

// TestComposeKeys checks the keys of docker-compose.yml against the Compose
// specification, as `docker compose` would before doing anything.
func TestComposeKeys(t *testing.T) {
	var raw map[string]any
	if err := yaml.Unmarshal(readCompose(t), &raw); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	for _, k := range sortedKeys(raw) {
		switch {
		case k == "version":
			t.Errorf("docker-compose.yml: top-level key %q is obsolete in the Compose specification: remove it", k)
		case !strings.HasPrefix(k, "x-") && !slices.Contains(composeTopLevelKeys, k):
			t.Errorf("docker-compose.yml: unknown top-level key %q", k)
		}
	}
	services, _ := raw["services"].(map[string]any)
	for _, name := range sortedKeys(services) {
		svc, ok := services[name].(map[string]any)
		if !ok {
			t.Errorf("docker-compose.yml: service %q: want a mapping", name)
			continue
		}
		for _, k := range sortedKeys(svc) {
			if !strings.HasPrefix(k, "x-") && !slices.Contains(composeServiceKeys, k) {
				t.Errorf("docker-compose.yml: service %q: unknown key %q", name, k)
			}
		}
		if r, ok := svc["restart"]; ok {
			switch v := fmt.Sprint(r); {
			case v == "no", v == "always", v == "unless-stopped", v == "on-failure", strings.HasPrefix(v, "on-failure:"):
			default:
				t.Errorf("docker-compose.yml: service %q: restart %q: want no, always, on-failure[:N] or unless-stopped", name, v)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// command returns a service's command in exec form (a string is split on
// white space, as Compose does for a command without quotes).
func (s composeService) command() ([]string, error) {
	switch s.Command.Kind {
	case 0:
		return nil, nil
	case yaml.ScalarNode:
		return strings.Fields(s.Command.Value), nil
	case yaml.SequenceNode:
		var cmd []string
		err := s.Command.Decode(&cmd)
		return cmd, err
	}
	return nil, fmt.Errorf("line %d: want a string or a list of strings", s.Command.Line)
}

// environment returns a service's environment as a map; a variable without
// a value (taken from the shell running compose) maps to nil.
func (s composeService) environment() (map[string]*string, error) {
	env := map[string]*string{}
	switch s.Environment.Kind {
	case 0:
	case yaml.MappingNode:
		if err := s.Environment.Decode(&env); err != nil {
			return nil, err
		}
	case yaml.SequenceNode:
		var list []string
		if err := s.Environment.Decode(&list); err != nil {
			return nil, err
		}
		for _, kv := range list {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = &v
			} else {
				env[kv] = nil
			}
		}
	default:
		return nil, fmt.Errorf("line %d: want a mapping or a list of KEY=VALUE", s.Environment.Line)
	}
	for k, v := range env {
		if v != nil {
			iv := interpolate(*v)
			env[k] = &iv
		}
	}
	return env, nil
}

// interpolate replaces Compose's ${NAME}, ${NAME:?message} and
// ${NAME:-default} with testSecret(NAME), as if .env held a value for
// every variable: the same name gives the same value wherever it is used.
func interpolate(s string) string {
	return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)[^}]*\}`).ReplaceAllStringFunc(s, func(m string) string {
		name := regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)`).FindStringSubmatch(m)[1]
		return testSecret(name)
	})
}

// testSecret is the value .env would hold for name: long enough for a
// token, and safe in a URL.
func testSecret(name string) string { return "test-" + strings.ToLower(name) + "-0123456789abcdef" }

// dependsOn returns the services a service depends on and the condition of
// each ("service_started" for the short syntax).
func (s composeService) dependsOn() (map[string]string, error) {
	deps := map[string]string{}
	switch s.DependsOn.Kind {
	case 0:
	case yaml.SequenceNode:
		var list []string
		if err := s.DependsOn.Decode(&list); err != nil {
			return nil, err
		}
		for _, d := range list {
			deps[d] = "service_started"
		}
	case yaml.MappingNode:
		var long map[string]struct {
			Condition string `yaml:"condition"`
		}
		if err := s.DependsOn.Decode(&long); err != nil {
			return nil, err
		}
		for d, v := range long {
			deps[d] = cmpOr(v.Condition, "service_started")
		}
	default:
		return nil, fmt.Errorf("line %d: want a list or a mapping", s.DependsOn.Line)
	}
	return deps, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// mount is one entry of a service's volumes.
type mount struct {
	named  string // named volume ("" for bind mounts and anonymous volumes)
	source string // the host path of a bind mount
	target string
}

// mounts returns a service's volume entries, short or long syntax.
func (s composeService) mounts() ([]mount, error) {
	var out []mount
	for _, n := range s.Volumes {
		switch n.Kind {
		case yaml.ScalarNode:
			parts := strings.Split(n.Value, ":")
			if len(parts) == 1 { // anonymous volume
				out = append(out, mount{target: parts[0]})
				continue
			}
			m := mount{target: parts[1]}
			if src := parts[0]; !strings.HasPrefix(src, "/") && !strings.HasPrefix(src, ".") && !strings.HasPrefix(src, "~") {
				m.named = src
			} else {
				m.source = src
			}
			out = append(out, m)
		case yaml.MappingNode:
			var long struct {
				Type   string `yaml:"type"`
				Source string `yaml:"source"`
				Target string `yaml:"target"`
			}
			if err := n.Decode(&long); err != nil {
				return nil, err
			}
			m := mount{target: long.Target}
			if long.Type == "volume" {
				m.named = long.Source
			}
			out = append(out, m)
		default:
			return nil, fmt.Errorf("line %d: want a string or a mapping", n.Line)
		}
	}
	return out, nil
}

// fixedHostPorts returns the port entries that bind a fixed host port: two
// replicas of such a service would fight over it.
func (s composeService) fixedHostPorts() ([]string, error) {
	var fixed []string
	for _, n := range s.Ports {
		switch n.Kind {
		case yaml.ScalarNode:
			// "[HOST:]CONTAINER[/PROTOCOL]", HOST being "[IP:]PORT".
			if strings.Contains(strings.TrimPrefix(n.Value, "["), ":") {
				fixed = append(fixed, n.Value)
			}
		case yaml.MappingNode:
			var long struct {
				Published string `yaml:"published"`
			}
			if err := n.Decode(&long); err != nil {
				return nil, err
			}
			if long.Published != "" {
				fixed = append(fixed, "published: "+long.Published)
			}
		default:
			return nil, fmt.Errorf("line %d: want a string or a mapping", n.Line)
		}
	}
	return fixed, nil
}

// dockerfilePath returns the Dockerfile a service is built from ("" if it
// is not built).
func (s composeService) dockerfilePath() (string, error) {
	switch s.Build.Kind {
	case 0:
		return "", nil
	case yaml.ScalarNode:
		return filepath.Join(repoRoot, s.Build.Value, "Dockerfile"), nil
	case yaml.MappingNode:
		var long struct {
			Context    string `yaml:"context"`
			Dockerfile string `yaml:"dockerfile"`
		}
		if err := s.Build.Decode(&long); err != nil {
			return "", err
		}
		return filepath.Join(repoRoot, cmpOr(long.Context, "."), cmpOr(long.Dockerfile, "Dockerfile")), nil
	}
	return "", fmt.Errorf("line %d: want a path or a mapping", s.Build.Line)
}

// freshcrawlServices returns the services running the image built from the
// Dockerfile: those with a build section, and those naming the same image
// as one of them.
func freshcrawlServices(t *testing.T, cf composeFile) map[string]string {
	t.Helper()
	byImage := map[string]string{} // image → Dockerfile
	out := map[string]string{}     // service → Dockerfile
	for _, name := range sortedKeys(cf.Services) {
		svc := cf.Services[name]
		df, err := svc.dockerfilePath()
		if err != nil {
			t.Errorf("docker-compose.yml: service %q: build: %v", name, err)
			continue
		}
		if df != "" {
			out[name] = df
			if svc.Image != "" {
				byImage[svc.Image] = df
			}
		}
	}
	for name, svc := range cf.Services {
		if df, ok := byImage[svc.Image]; ok && out[name] == "" {
			out[name] = df
		}
	}
	return out
}

func TestComposeServicesAndVolumes(t *testing.T) {
	cf := loadCompose(t)
	for _, name := range append(slices.Clone(natsServices), "coordinator", "worker") {
		if _, ok := cf.Services[name]; !ok {
			t.Errorf("docker-compose.yml: service %q is missing", name)
		}
	}
	fc := freshcrawlServices(t, cf)
	for _, name := range []string{"coordinator", "worker"} {
		if _, ok := cf.Services[name]; ok && fc[name] == "" {
			t.Errorf("docker-compose.yml: service %q: want the image built from the Dockerfile (build: or the image of a service with build:)", name)
		}
	}

	used := map[string]bool{}
	for _, name := range sortedKeys(cf.Services) {
		svc := cf.Services[name]
		ms, err := svc.mounts()
		if err != nil {
			t.Errorf("docker-compose.yml: service %q: volumes: %v", name, err)
		}
		for _, m := range ms {
			if m.named == "" {
				continue
			}
			used[m.named] = true
			if _, ok := cf.Volumes[m.named]; !ok {
				t.Errorf("docker-compose.yml: service %q: volumes: named volume %q is not declared under the top-level volumes:", name, m.named)
			}
		}
		deps, err := svc.dependsOn()
		if err != nil {
			t.Errorf("docker-compose.yml: service %q: depends_on: %v", name, err)
		}
		for _, d := range sortedKeys(deps) {
			target, ok := cf.Services[d]
			if !ok {
				t.Errorf("docker-compose.yml: service %q: depends_on: no service %q", name, d)
				continue
			}
			switch cond := deps[d]; cond {
			case "service_started", "service_completed_successfully":
			case "service_healthy":
				if target.Healthcheck == nil || target.Healthcheck.Disable || target.Healthcheck.Test.Kind == 0 {
					t.Errorf("docker-compose.yml: service %q: depends_on: %q with condition service_healthy, but %q has no healthcheck", name, d, d)
				}
			default:
				t.Errorf("docker-compose.yml: service %q: depends_on: %q: unknown condition %q", name, d, cond)
			}
		}
	}
	for _, v := range sortedKeys(cf.Volumes) {
		if !used[v] {
			t.Errorf("docker-compose.yml: top-level volume %q is used by no service", v)
		}
	}

	// Workers scale with `docker compose up --scale worker=N`: replicas
	// cannot share a container name or a host port, and must not share
	// state.
	if w, ok := cf.Services["worker"]; ok {
		if w.ContainerName != "" {
			t.Errorf("docker-compose.yml: service \"worker\": container_name %q: a fixed name prevents scaling the workers", w.ContainerName)
		}
		fixed, err := w.fixedHostPorts()
		if err != nil {
			t.Errorf("docker-compose.yml: service \"worker\": ports: %v", err)
		}
		for _, p := range fixed {
			t.Errorf("docker-compose.yml: service \"worker\": ports: %q binds a fixed host port, so a second replica cannot start", p)
		}
		ms, _ := w.mounts()
		for _, m := range ms {
			if m.named != "" {
				t.Errorf("docker-compose.yml: service \"worker\": volumes: named volume %q: workers are stateless, and replicas would share it", m.named)
			}
		}
	}
	// One coordinator: it holds an exclusive lock on its bbolt store.
	if c, ok := cf.Services["coordinator"]; ok && c.Deploy.Replicas != nil && *c.Deploy.Replicas > 1 {
		t.Errorf("docker-compose.yml: service \"coordinator\": deploy.replicas %d: run exactly one coordinator", *c.Deploy.Replicas)
	}
}

// TestComposeCommandsAndEnvironment runs every freshcrawl service's command
// line and environment through the binary's own command tree and config
// resolution, as the container would at start-up.
func TestComposeCommandsAndEnvironment(t *testing.T) {
	cf := loadCompose(t)
	natsHosts := map[string]bool{}
	for name, svc := range cf.Services {
		if strings.HasPrefix(svc.Image, "nats:") || strings.HasPrefix(svc.Image, "nats@") {
			natsHosts[name] = true
		}
	}
	dockerfiles := map[string]dockerfile{}
	fc := freshcrawlServices(t, cf)
	for _, name := range sortedKeys(fc) {
		svc := cf.Services[name]
		df, ok := dockerfiles[fc[name]]
		if !ok {
			df = parseDockerfile(t, fc[name])
			dockerfiles[fc[name]] = df
		}
		where := fmt.Sprintf("docker-compose.yml: service %q", name)

		args, err := svc.command()
		if err != nil {
			t.Errorf("%s: command: %v", where, err)
			continue
		}
		if len(args) == 0 {
			args, where = df.cmd, fmt.Sprintf("%s (command from the Dockerfile's CMD)", where)
		}
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			t.Errorf("%s: command %q: want a subcommand first", where, args)
			continue
		}
		root := newRoot(io.Discard, io.Discard)
		sub, _, err := root.Find([]string{args[0]})
		if err != nil || sub == root || sub.Name() != args[0] {
			t.Errorf("%s: command: %q is not a freshcrawl subcommand (have %s)", where, args[0], subcommandNames(root))
			continue
		}
		for _, a := range args[1:] {
			if !strings.HasPrefix(a, "--") || a == "--" {
				continue
			}
			flag, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if sub.Flags().Lookup(flag) == nil {
				t.Errorf("%s: command: `freshcrawl %s` has no flag --%s", where, args[0], flag)
			}
		}
		if err := sub.ParseFlags(args[1:]); err != nil {
			t.Errorf("%s: command %q: %v", where, args, err)
			continue
		}
		if err := sub.ValidateArgs(sub.Flags().Args()); err != nil {
			t.Errorf("%s: command %q: %v", where, args, err)
		}

		// The container's environment: the image's ENV, then the service's.
		env := map[string]*string{}
		for k, v := range df.env {
			env[k] = &v
		}
		svcEnv, err := svc.environment()
		if err != nil {
			t.Errorf("%s: environment: %v", where, err)
			continue
		}
		for k, v := range svcEnv {
			env[k] = v
		}
		keyOf := map[string]string{} // FRESHCRAWL_X → flag name
		sub.Flags().VisitAll(func(f *pflag.Flag) { keyOf[config.EnvName(f.Name)] = f.Name })
		var environ []string
		for _, k := range sortedKeys(env) {
			if !strings.HasPrefix(k, "FRESHCRAWL_") {
				continue
			}
			from := "environment"
			if _, ok := svcEnv[k]; !ok {
				from = "Dockerfile ENV"
			}
			flag, ok := keyOf[k]
			if !ok {
				t.Errorf("%s: %s: %s is not a setting of `freshcrawl %s` (it reads %s)", where, from, k, sub.Name(), envNames(sub))
				continue
			}
			v := env[k]
			if v == nil {
				continue // taken from the shell running compose: nothing to check
			}
			environ = append(environ, k+"="+*v)
			// A fresh command, so that one bad value is reported alone.
			fresh, _, _ := newRoot(io.Discard, io.Discard).Find([]string{sub.Name()})
			if err := fresh.Flags().Set(flag, *v); err != nil {
				t.Errorf("%s: %s: %s=%q does not parse as --%s: %v", where, from, k, *v, flag, err)
			}
			if k == config.EnvName("nats") {
				checkNATSURLs(t, where, *v, natsHosts)
			}
			if k == config.EnvName("replicas") && len(natsHosts) > 0 {
				if n, err := strconv.Atoi(*v); err == nil && n > len(natsHosts) {
					t.Errorf("%s: %s: %s=%d exceeds the %d NATS nodes of this file", where, from, k, n, len(natsHosts))
				}
			}
		}
		// What the binary itself does at start-up, after parsing flags.
		if err := config.Resolve(sub.Flags(), environ); err != nil {
			t.Errorf("%s: `freshcrawl %s` rejects its environment: %v", where, sub.Name(), err)
		}
	}
}

// checkNATSURLs checks that every host of a FRESHCRAWL_NATS value is a NATS
// service of the file.
func checkNATSURLs(t *testing.T, where, v string, natsHosts map[string]bool) {
	t.Helper()
	for _, s := range strings.Split(v, ",") {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || u.Scheme != "nats" || u.Hostname() == "" {
			t.Errorf("%s: environment: FRESHCRAWL_NATS: %q is not a nats://host:port URL", where, s)
			continue
		}
		if !natsHosts[u.Hostname()] {
			t.Errorf("%s: environment: FRESHCRAWL_NATS: %q names no NATS service of this file", where, s)
		}
	}
}

func subcommandNames(root *cobra.Command) string {
	var names []string
	for _, c := range root.Commands() {
		names = append(names, c.Name())
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func envNames(cmd *cobra.Command) string {
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, config.EnvName(f.Name)) })
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// natsOptions parses a nats-server command line: --opt value, --opt=value
// or a bare --opt (value "").
func natsOptions(args []string) map[string]string {
	opts := map[string]string{}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		args = args[1:] // the executable, nats-server
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name := strings.TrimLeft(a, "-")
		if k, v, ok := strings.Cut(name, "="); ok {
			opts[k] = v
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			opts[name] = args[i+1]
			i++
		} else {
			opts[name] = ""
		}
	}
	return opts
}

// natsConfig is a NATS service of docker-compose.yml read as the
// container's nats-server would read it: its --config file (bind-mounted
// from the repository) with the service's environment.
func natsConfig(t *testing.T, cf composeFile, name string) *server.Options {
	t.Helper()
	where := fmt.Sprintf("docker-compose.yml: service %q", name)
	svc := cf.Services[name]
	args, err := svc.command()
	if err != nil {
		t.Fatalf("%s: command: %v", where, err)
	}
	opts := natsOptions(args)
	file, ok := opts["config"]
	if !ok {
		file, ok = opts["c"]
	}
	if !ok {
		t.Fatalf("%s: command %q: want nats-server --config FILE", where, args)
	}
	ms, _ := svc.mounts()
	i := slices.IndexFunc(ms, func(m mount) bool { return m.target == file && m.source != "" })
	if i < 0 {
		t.Fatalf("%s: volumes: --config %s is not bind-mounted from the repository", where, file)
	}
	env, err := svc.environment()
	if err != nil {
		t.Fatalf("%s: environment: %v", where, err)
	}
	for k, v := range env {
		if v == nil {
			t.Fatalf("%s: environment: %s has no value", where, k)
		}
		t.Setenv(k, *v)
	}
	o, err := server.ProcessConfigFile(filepath.Join(repoRoot, ms[i].source))
	if err != nil {
		t.Fatalf("%s: nats-server rejects its config: %v", where, err)
	}
	return o
}

// natsUsers are the users of a NATS config: user → password.
func natsUsers(o *server.Options) map[string]string {
	users := map[string]string{}
	for _, u := range o.Users {
		users[u.Username] = u.Password
	}
	return users
}

func TestComposeNATSCluster(t *testing.T) {
	cf := loadCompose(t)
	clusterNames := map[string]bool{}
	usersOf := map[string]map[string]string{}
	for _, name := range natsServices {
		svc, ok := cf.Services[name]
		if !ok {
			continue // reported by TestComposeServicesAndVolumes
		}
		where := fmt.Sprintf("docker-compose.yml: service %q", name)
		if !strings.HasPrefix(svc.Image, "nats:") {
			t.Errorf("%s: image %q: want the official nats image", where, svc.Image)
		}
		o := natsConfig(t, cf, name)
		if !o.JetStream {
			t.Errorf("%s: JetStream is off", where)
		}
		if o.ServerName != name {
			t.Errorf("%s: server_name %q, want %q (unique and stable: JetStream names its Raft peers by it)", where, o.ServerName, name)
		}
		clusterNames[o.Cluster.Name] = true
		if o.Cluster.Port == 0 {
			t.Errorf("%s: no cluster listen port", where)
		}
		if o.Cluster.Username == "" || o.Cluster.Password == "" {
			t.Errorf("%s: the cluster port takes any node: want authorization { user, password }", where)
		}
		routed := map[string]bool{}
		for _, u := range o.Routes {
			if _, ok := cf.Services[u.Hostname()]; !ok {
				t.Errorf("%s: route %s names no service of this file", where, u.Redacted())
			}
			if u.Port() != strconv.Itoa(o.Cluster.Port) {
				t.Errorf("%s: route %s: port %s, want the cluster port %d", where, u.Redacted(), u.Port(), o.Cluster.Port)
			}
			if p, _ := u.User.Password(); u.User.Username() != o.Cluster.Username || p != o.Cluster.Password {
				t.Errorf("%s: route %s does not carry the cluster's user and password", where, u.Redacted())
			}
			routed[u.Hostname()] = true
		}
		for _, peer := range natsServices {
			if !routed[peer] {
				t.Errorf("%s: the routes do not name %q", where, peer)
			}
		}
		if o.StoreDir == "" {
			t.Errorf("%s: no jetstream store_dir: JetStream would keep its files in the container's temporary directory", where)
		} else {
			ms, _ := svc.mounts()
			if !slices.ContainsFunc(ms, func(m mount) bool { return m.named != "" && m.target == o.StoreDir }) {
				t.Errorf("%s: volumes: no named volume on store_dir %s: the streams would not survive re-creating the container", where, o.StoreDir)
			}
		}
		if svc.Healthcheck == nil || svc.Healthcheck.Test.Kind == 0 {
			t.Errorf("%s: healthcheck: missing (the freshcrawl services wait for service_healthy)", where)
		} else if o.HTTPPort == 0 || !strings.Contains(fmt.Sprint(nodeStrings(&svc.Healthcheck.Test)), fmt.Sprintf(":%d/healthz", o.HTTPPort)) {
			t.Errorf("%s: healthcheck: want the monitoring endpoint :%d/healthz (http_port)", where, o.HTTPPort)
		}
		if o.NoAuthUser != "" || o.Authorization != "" || len(o.Users) == 0 {
			t.Errorf("%s: clients must authenticate as a user (no_auth_user %q, token set %v, %d users)", where, o.NoAuthUser, o.Authorization != "", len(o.Users))
		}
		for _, u := range o.Users {
			if u.Account == nil || u.Account.Name == "$G" {
				t.Errorf("%s: user %q is in the global account, want freshcrawl's own", where, u.Username)
			}
		}
		usersOf[name] = natsUsers(o)
	}
	if len(clusterNames) > 1 {
		t.Errorf("docker-compose.yml: NATS services: the cluster name differs between nodes: %v", sortedKeys(clusterNames))
	}
	// Every freshcrawl service authenticates as a user every node knows,
	// with that user's password.
	for _, name := range sortedKeys(freshcrawlServices(t, cf)) {
		env, _ := cf.Services[name].environment()
		user, pw := env[config.EnvName("nats-user")], env[config.EnvName("nats-password")]
		if user == nil || pw == nil {
			t.Errorf("docker-compose.yml: service %q: no FRESHCRAWL_NATS_USER and FRESHCRAWL_NATS_PASSWORD", name)
			continue
		}
		for node, users := range usersOf {
			if want, ok := users[*user]; !ok || want != *pw {
				t.Errorf("docker-compose.yml: service %q: NATS user %q (password from the same .env variable) is not a user of %s", name, *user, node)
			}
		}
	}
}

// TestComposeNATSConfigRuns starts a real nats-server from the NATS
// nodes' config (alone: its cluster routes left out, on a free port) and
// connects as each freshcrawl service does, creating the streams.
func TestComposeNATSConfigRuns(t *testing.T) {
	cf := loadCompose(t)
	o := natsConfig(t, cf, natsServices[0])
	o.Host, o.Port, o.HTTPPort = "127.0.0.1", -1, 0
	o.Cluster, o.Routes, o.RoutesStr = server.ClusterOpts{}, nil, ""
	o.StoreDir = t.TempDir()
	o.NoSigs, o.NoLog = true, true
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	defer func() { s.Shutdown(); s.WaitForShutdown() }()
	log := testutil.QuietLogger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range sortedKeys(freshcrawlServices(t, cf)) {
		env, _ := cf.Services[name].environment()
		a := broker.Auth{User: *env[config.EnvName("nats-user")], Password: *env[config.EnvName("nats-password")]}
		opts, err := a.Options()
		if err != nil {
			t.Fatal(err)
		}
		nc, js, err := broker.Connect(s.ClientURL(), name, log, opts...)
		if err != nil {
			t.Fatalf("service %q cannot connect with its user %q: %v", name, a.User, err)
		}
		if err := broker.Ensure(ctx, js, broker.DefaultSettings()); err != nil {
			t.Errorf("service %q: JetStream: %v", name, err)
		}
		nc.Close()
	}
	// One attempt, without the processes' retries: the server's answer.
	if nc, err := nats.Connect(s.ClientURL(), nats.NoReconnect()); err == nil {
		nc.Close()
		t.Error("connected without a user")
	}
}

// nodeStrings returns the scalars of a string or list node.
func nodeStrings(n *yaml.Node) []string {
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value}
	}
	var out []string
	for _, c := range n.Content {
		out = append(out, c.Value)
	}
	return out
}

// dockerfile is what the checks read from a Dockerfile.
type dockerfile struct {
	buildOutput string            // -o of the go build of ./cmd/freshcrawl
	copies      map[string]string // final stage: COPY --from source → destination
	entrypoint  []string
	cmd         []string
	env         map[string]string // final stage ENV
}

// parseDockerfile reads the instructions of a Dockerfile: continuation
// lines joined, comments dropped, the final stage's COPY, ENV, ENTRYPOINT and
// CMD kept.
func parseDockerfile(t *testing.T, file string) dockerfile {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	var lines []string
	cur := ""
	for _, l := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur == "") {
			continue
		}
		if s, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur += s + " "
			continue
		}
		lines = append(lines, cur+trimmed)
		cur = ""
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	df := dockerfile{copies: map[string]string{}, env: map[string]string{}}
	for _, l := range lines {
		instr, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM": // a new stage: only the last one's settings count
			df.copies, df.env, df.entrypoint, df.cmd = map[string]string{}, map[string]string{}, nil, nil
		case "RUN":
			if i := strings.Index(rest, "go build"); i >= 0 && strings.Contains(rest[i:], "./cmd/freshcrawl") {
				f := strings.Fields(rest[i:])
				if j := slices.Index(f, "-o"); j >= 0 && j+1 < len(f) {
					df.buildOutput = f[j+1]
				}
			}
		case "COPY":
			f := strings.Fields(rest)
			if len(f) >= 3 && slices.ContainsFunc(f, func(s string) bool { return strings.HasPrefix(s, "--from=") }) {
				df.copies[f[len(f)-2]] = f[len(f)-1]
			}
		case "ENV":
			f := strings.Fields(rest)
			if len(f) > 0 && !strings.Contains(f[0], "=") { // ENV KEY VALUE
				df.env[f[0]] = strings.Trim(strings.Join(f[1:], " "), `"`)
				break
			}
			for _, kv := range f { // ENV K=V [K=V...]
				k, v, _ := strings.Cut(kv, "=")
				df.env[k] = strings.Trim(v, `"`)
			}
		case "ENTRYPOINT", "CMD":
			var exec []string
			if err := json.Unmarshal([]byte(rest), &exec); err != nil {
				t.Errorf("Dockerfile: %s %s: want the exec (JSON) form, so that signals reach freshcrawl: %v", instr, rest, err)
			}
			if strings.EqualFold(instr, "ENTRYPOINT") {
				df.entrypoint = exec
			} else {
				df.cmd = exec
			}
		}
	}
	return df
}

func TestComposeDockerfile(t *testing.T) {
	df := parseDockerfile(t, filepath.Join(repoRoot, "Dockerfile"))
	if df.buildOutput == "" {
		t.Fatalf("Dockerfile: no `go build ... -o FILE ./cmd/freshcrawl`")
	}
	dst, ok := df.copies[df.buildOutput]
	if !ok {
		t.Fatalf("Dockerfile: the final stage does not COPY --from the build output %s", df.buildOutput)
	}
	if strings.HasSuffix(dst, "/") {
		dst += path.Base(df.buildOutput)
	}
	if len(df.entrypoint) == 0 || df.entrypoint[0] != dst {
		t.Errorf("Dockerfile: ENTRYPOINT %q: want [%q], the binary copied from %s", df.entrypoint, dst, df.buildOutput)
	}
	if len(df.cmd) > 0 {
		root := newRoot(io.Discard, io.Discard)
		if sub, _, err := root.Find(df.cmd[:1]); err != nil || sub == root {
			t.Errorf("Dockerfile: CMD %q: %q is not a freshcrawl subcommand (have %s)", df.cmd, df.cmd[0], subcommandNames(root))
		}
	}
	// The image's environment applies to every subcommand run from it, so
	// each variable must at least be a key the binary knows.
	if err := config.Resolve(pflag.NewFlagSet("image", pflag.ContinueOnError), envList(df.env)); err != nil {
		t.Errorf("Dockerfile: ENV: %v", err)
	}
}

func envList(env map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(env) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// Docker sends SIGKILL after stop_grace_period (10s unless set): a worker
// must be given more than its own grace to finish or hand back its tasks,
// or `docker stop` kills it holding them.
func TestComposeWorkerStopsCleanly(t *testing.T) {
	cf := loadCompose(t)
	svc, ok := cf.Services["worker"]
	if !ok {
		t.Fatal("docker-compose.yml: no worker service")
	}
	d, err := time.ParseDuration(svc.StopGracePeriod)
	if err != nil {
		t.Fatalf("docker-compose.yml: worker: stop_grace_period %q: %v", svc.StopGracePeriod, err)
	}
	if grace := config.Default().StopGrace; d <= grace {
		t.Errorf("docker-compose.yml: worker: stop_grace_period %s, want more than the worker's --stop-grace %s", d, grace)
	}
}
