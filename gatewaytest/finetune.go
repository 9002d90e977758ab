package gatewaytest

import "net/http"

func (s *Server) fineTuningRoutes(mux *http.ServeMux) {}
