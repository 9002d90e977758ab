package gateway

import "net/http"

// serveFineTuningJob serves GET /fine_tuning/jobs/{fine_tuning_job_id}.
func (g *Gateway) serveFineTuningJob(w http.ResponseWriter, r *http.Request) { g.forward(w, r, nil) }

// serveFineTuningJobs serves GET /fine_tuning/jobs.
func (g *Gateway) serveFineTuningJobs(w http.ResponseWriter, r *http.Request) { g.forward(w, r, nil) }

// serveFiles serves GET /files.
func (g *Gateway) serveFiles(w http.ResponseWriter, r *http.Request) { g.forward(w, r, nil) }
