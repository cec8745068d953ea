package main

import (
	"context"
	"log/slog"

	"github.com/faultline/faultline/shipper"
	"github.com/faultline/faultline/transport"
)

// shipDemo is server.Config.DemoShip: serve --demo replays each node through
// a real in-process shipper (package server does not link the shipper).
func shipDemo(ctx context.Context, node string, paths []string, nats transport.NATSOptions, stateDir string, log *slog.Logger) error {
	return shipper.Run(ctx, shipper.Config{Paths: paths, Node: node, NATS: nats, StateDir: stateDir, Log: log,
		Metrics: shipper.NewMetrics()})
}
