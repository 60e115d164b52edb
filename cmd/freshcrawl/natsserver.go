package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/freshcrawl/freshcrawl/internal/broker"
)

// natsServerCmd runs one node of a NATS JetStream cluster from the module's
// own nats-server: the fault suite starts three of them as separate
// processes, so that nothing needs installing. Hidden: a production
// cluster runs the official nats-server.
func natsServerCmd() *cobra.Command {
	var o broker.ClusterNodeOptions
	cmd := &cobra.Command{
		Use:    "nats-server",
		Short:  "Run one node of a NATS JetStream cluster (for the fault suite)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			srv, err := broker.StartClusterNode(o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "nats-server %s ready: client %s, cluster %s\n", o.Name, srv.ClientURL(), o.Cluster)
			<-cmd.Context().Done()
			srv.Shutdown()
			srv.WaitForShutdown()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", "", "server name, unique and stable")
	f.StringVar(&o.Listen, "listen", "127.0.0.1:4222", "client address")
	f.StringVar(&o.Cluster, "cluster", "127.0.0.1:6222", "cluster address")
	f.StringVar(&o.Routes, "routes", "", "comma-separated nats://host:port of every node's cluster address")
	f.StringVar(&o.Dir, "store-dir", "", "JetStream store directory")
	f.BoolVar(&o.NoAdvertise, "no-advertise", false, "do not tell clients the other nodes' addresses")
	return cmd
}
