package cuda

// Stream is a CUDA stream of c. The zero *Stream (nil) passed to Launch is
// the context's default stream.
type Stream struct {
	h uintptr
	c *Context
}

// NewStream creates a stream that does not synchronize with the default
// stream (CU_STREAM_NON_BLOCKING).
func (c *Context) NewStream() (*Stream, error) {
	s := &Stream{c: c}
	err := c.call("cuStreamCreate", func() Result { return cuStreamCreate(&s.h, 1) })
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Synchronize waits for the stream's work to finish.
func (s *Stream) Synchronize() error {
	return s.c.call("cuStreamSynchronize", func() Result { return cuStreamSynchronize(s.h) })
}

// Destroy destroys the stream once its work is done.
func (s *Stream) Destroy() error {
	return s.c.call("cuStreamDestroy", func() Result { return cuStreamDestroy(s.h) })
}

func (s *Stream) handle() uintptr {
	if s == nil {
		return 0
	}
	return s.h
}

// Event is a CUDA event, for timing work on a stream.
type Event struct {
	h uintptr
	c *Context
}

// NewEvent creates an event that records timing.
func (c *Context) NewEvent() (*Event, error) {
	e := &Event{c: c}
	err := c.call("cuEventCreate", func() Result { return cuEventCreate(&e.h, 0) })
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Record records the event on s (nil: the default stream).
func (e *Event) Record(s *Stream) error {
	return e.c.call("cuEventRecord", func() Result { return cuEventRecord(e.h, s.handle()) })
}

// Synchronize waits for the event.
func (e *Event) Synchronize() error {
	return e.c.call("cuEventSynchronize", func() Result { return cuEventSynchronize(e.h) })
}

// Elapsed returns the milliseconds between start and e, both recorded and
// complete.
func (e *Event) Elapsed(start *Event) (float32, error) {
	var ms float32
	err := e.c.call("cuEventElapsedTime", func() Result { return cuEventElapsedTime(&ms, start.h, e.h) })
	return ms, err
}

// Destroy destroys the event.
func (e *Event) Destroy() error {
	return e.c.call("cuEventDestroy", func() Result { return cuEventDestroy(e.h) })
}
