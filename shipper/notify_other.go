//go:build !linux

package shipper

import (
	"log/slog"
	"os"
)

// notifier is inotify on Linux; elsewhere followers only poll.
type notifier struct{}

func newNotifier(*slog.Logger) *notifier { return nil }

func (n *notifier) watchFile(*os.File) (<-chan struct{}, func()) { return nil, func() {} }

func (n *notifier) Close() {}
