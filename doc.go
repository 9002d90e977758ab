// Package gateway is an embeddable model gateway.
package gateway
