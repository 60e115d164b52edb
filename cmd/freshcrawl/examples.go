package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// examples are the Example texts of `--help`, by command path. Every
// line that starts with "freshcrawl " is a command line the examples
// test parses against the command tree, so a renamed flag fails the
// test rather than misleading a reader.
var examples = map[string]string{
	"freshcrawl": `  freshcrawl demo                      # a simulated web, crawled; a table of freshness
  freshcrawl run --seeds seeds.txt     # crawl your own seeds
  freshcrawl --version`,
	"freshcrawl run": `  # Everything in one process: embedded NATS, coordinator, 4 workers, API on :8080
  freshcrawl run --seeds seeds.txt
  freshcrawl run --budget 5/s --host-rate 1/m --data /var/lib/freshcrawl`,
	"freshcrawl coordinator": `  # Against a 3-node cluster that wants a password over TLS; the API with tokens and HTTPS
  freshcrawl coordinator --nats nats://n1:4222,nats://n2:4222,nats://n3:4222 --replicas 3 --nats-user crawler --nats-password "$PW" --nats-ca ca.pem --listen 0.0.0.0:8443 --api-token "$ADMIN" --api-read-token "$GRAFANA" --tls-cert api.pem --tls-key api-key.pem
  # A config file (webhooks: are read from it too) and JSON logs
  freshcrawl coordinator --config freshcrawl.yaml --log-format json`,
	"freshcrawl worker": `  freshcrawl worker --nats nats://127.0.0.1:4222
  # With a credentials file (nsc), and /metrics and /healthz on :9100
  freshcrawl worker --nats tls://n1:4222 --nats-creds crawler.creds --nats-ca ca.pem --listen 0.0.0.0:9100 --concurrency 16`,
	"freshcrawl demo": `  freshcrawl demo
  freshcrawl demo --sim-pages 500 --budget 50/s --duration 2m`,
	"freshcrawl sim": `  freshcrawl sim --sim-hosts 8 --sim-pages 400
  curl -s 127.0.0.1:8090/urls > seeds.txt`,
	"freshcrawl seed": `  freshcrawl seed seeds.txt
  cat seeds.txt | freshcrawl seed -
  # To a coordinator elsewhere that requires a token
  FRESHCRAWL_API_TOKEN=... freshcrawl seed --api https://crawler.example:8443 seeds.txt`,
	"freshcrawl status": `  freshcrawl status
  freshcrawl status --json --api https://crawler.example:8443 --api-token "$TOKEN"`,
	"freshcrawl versions": `  freshcrawl versions https://example.com/prices
  freshcrawl versions --show 3 https://example.com/prices`,
	"freshcrawl items add":  `  freshcrawl items add --source papers items.jsonl`,
	"freshcrawl items list": `  freshcrawl items list --source papers --json`,
	"freshcrawl plan": `  freshcrawl plan --data ./freshcrawl-data --budget 10/s
  freshcrawl plan --rates rates.txt --target-freshness 0.9`,
	"freshcrawl urls": `  freshcrawl urls --host example.com --sort changes --desc
  freshcrawl urls --state failing --all --json`,
	"freshcrawl url show":   `  freshcrawl url show https://example.com/`,
	"freshcrawl url pause":  `  freshcrawl url pause --host example.com`,
	"freshcrawl url resume": `  freshcrawl url resume https://example.com/ https://example.com/news`,
	"freshcrawl url delete": `  freshcrawl url delete --prefix https://example.com/old/ --purge`,
	"freshcrawl url set": `  freshcrawl url set --weight 5 https://example.com/
  freshcrawl url set --mode capture --host prices.example`,
	"freshcrawl get": `  freshcrawl get https://example.com/
  freshcrawl get --raw https://example.com/ > page.html`,
	"freshcrawl export": `  freshcrawl export backup.jsonl
  freshcrawl export - | gzip > backup.jsonl.gz`,
	"freshcrawl import": `  freshcrawl import backup.jsonl
  gunzip -c backup.jsonl.gz | freshcrawl import -`,
	"freshcrawl bench throughput": `  freshcrawl bench throughput --workers 4 --duration 30s
  freshcrawl bench throughput --no-colly --json`,
	"freshcrawl bench policies": `  freshcrawl bench policies --days 30 --budget 2`,
	"freshcrawl bench probes":   `  freshcrawl bench probes --papers 2000 --k 10`,
	"freshcrawl bench schedule": `  freshcrawl bench schedule --sizes 10000,100000`,
	"freshcrawl bench scale": `  freshcrawl bench scale --sizes 1000000,3000000,10000000 --svg docs/scale.svg
  freshcrawl bench scale --sizes 100000 --no-compact --json`,
	"freshcrawl bench capture": `  freshcrawl bench capture --pages 200`,
	"freshcrawl backup": `  freshcrawl backup /backups/freshcrawl-$(date +%F).db
  # From a coordinator elsewhere that requires a token
  FRESHCRAWL_API_READ_TOKEN=... freshcrawl backup --api https://crawler.example:8443 copy.db`,
	"freshcrawl store check": `  freshcrawl store check
  freshcrawl store check --json /backups/freshcrawl-2026-01-01.db`,
	"freshcrawl nats-server": `  freshcrawl nats-server --name n1 --listen 127.0.0.1:4222 --cluster 127.0.0.1:6222 --routes nats://127.0.0.1:6222,nats://127.0.0.1:6223 --store-dir /tmp/n1`,
	"freshcrawl bench faults": `  freshcrawl bench faults --reps 3
  freshcrawl bench faults --cases worker-mid-fetch,stream-leader --keep`,
	"freshcrawl bench soak":     `  freshcrawl bench soak --duration 30m --urls 5000 --json`,
	"freshcrawl bench ceiling":  `  freshcrawl bench ceiling --duration 30s --max-in-flight 1024`,
	"freshcrawl bench scaleout": `  freshcrawl bench scaleout --workers 1,2,4,8 --duration 20s --json`,
}

// addExamples sets the Example of every command of the tree under c.
func addExamples(c *cobra.Command) {
	if ex, ok := examples[c.CommandPath()]; ok {
		c.Example = strings.TrimRight(ex, "\n")
	}
	for _, s := range c.Commands() {
		addExamples(s)
	}
}
