// Promises: none

//go:build !asan

package accel

const asanEnabled = false
