package keyparts

// ResetOpenCLDriver forgets the driver found, for a benchmark that
// measures finding it.
func ResetOpenCLDriver() {
	loadedDriver.mu.Lock()
	loadedDriver.d = Driver{}
	loadedDriver.prefetch = nil
	loadedDriver.prefetches = 0
	loadedDriver.mu.Unlock()
}

// ResetDynSections forgets every library's dynamic section read so far,
// as a new process starts.
func ResetDynSections() {
	dynSections.mu.Lock()
	clear(dynSections.m)
	dynSections.mu.Unlock()
}
