package kcache

import (
	"errors"
	"io"
	"log/slog"
)

func errorsIsMiss(err error) bool { return errors.Is(err, ErrMiss) }

func testLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
