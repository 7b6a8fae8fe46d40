package main

import (
	"context"
	"errors"

	"github.com/ipatlas/ipatlas/internal/accountstore"
	"github.com/ipatlas/ipatlas/internal/serve"
)

// runServe is `ipatlas serve`: it resolves the settings and runs the
// service (internal/serve) until ctx ends.
func runServe(ctx context.Context, e env, args []string) error {
	cfg, err := parseServeConfig(args, e)
	if err != nil {
		return err
	}
	cfg.MaxFeedShare = e.maxFeedShare
	o := serve.Options{Logger: serve.NewLogger(cfg, e.stderr), Stdout: e.stdout, Self: e.selfCommand(), Version: moduleVersion()}
	if isTerminal(e.stderr) {
		o.Progress = e.stderr
	}
	err = serve.Run(ctx, cfg, o)
	var se *serve.SettingError
	if errors.As(err, &se) || errors.Is(err, accountstore.ErrDSN) {
		// A setting the service cannot use, or a --store that names no
		// store: a usage mistake.
		return &exitError{code: exitUsage, err: err}
	}
	return err
}
