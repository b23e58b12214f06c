package opencl

import (
	"time"
	"unsafe"
)

const (
	eventExecutionStatus = 0x11D3 // CL_EVENT_COMMAND_EXECUTION_STATUS
	profilingStart       = 0x1282 // CL_PROFILING_COMMAND_START
	profilingEnd         = 0x1283 // CL_PROFILING_COMMAND_END
)

// Event tracks one enqueued command. The caller owns it and must Release
// it; releasing does not cancel the command.
type Event struct {
	ref
}

func newEvent(h uintptr) *Event {
	e := &Event{}
	e.h.Store(h)
	return e
}

// Wait blocks until the command completes. A command that failed on the
// device reports its (negative) status as an error.
func (e *Event) Wait() error { return WaitForEvents(e) }

// Release drops the event's reference. It is idempotent.
func (e *Event) Release() {
	if e != nil {
		e.release(clReleaseEvent)
	}
}

// Handle returns the raw cl_event (0 after Release).
func (e *Event) Handle() uintptr { return e.handle() }

// Status returns CL_EVENT_COMMAND_EXECUTION_STATUS: 0 (CL_COMPLETE) when
// done, positive while queued or running, negative if the command failed.
func (e *Event) Status() (int32, error) {
	return infoValue[int32]("clGetEventInfo", e.infoFunc(&clGetEventInfo), eventExecutionStatus)
}

// Duration returns how long the command ran on the device (end minus start
// timestamps). The queue must have been created with QueueProfiling, and
// the command must be complete.
func (e *Event) Duration() (time.Duration, error) {
	f := e.infoFunc(&clGetEventProfilingInfo)
	start, err := infoValue[uint64]("clGetEventProfilingInfo", f, profilingStart)
	if err != nil {
		return 0, err
	}
	end, err := infoValue[uint64]("clGetEventProfilingInfo", f, profilingEnd)
	if err != nil {
		return 0, err
	}
	return time.Duration(end - start), nil
}

// infoFunc binds the event to one of the two event query entry points. The
// entry point is passed in, not read at bind time, because it is nil until
// Load runs and infoValue calls Load first.
func (e *Event) infoFunc(fn *func(uintptr, uint32, uintptr, unsafe.Pointer, *uintptr) int32) infoFunc {
	h := e.handle()
	return func(param uint32, size uintptr, val unsafe.Pointer, sizeRet *uintptr) int32 {
		return (*fn)(h, param, size, val, sizeRet)
	}
}

// WaitForEvents blocks until every event has completed. Nil events are
// skipped. If any command failed, the error is
// CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST.
func WaitForEvents(evs ...*Event) error {
	if err := Load(); err != nil {
		return err
	}
	hs := make([]uintptr, 0, len(evs))
	for _, e := range evs {
		if e != nil {
			hs = append(hs, e.handle())
		}
	}
	if len(hs) == 0 {
		return nil
	}
	return check(clWaitForEvents(uint32(len(hs)), &hs[0]), "clWaitForEvents")
}
