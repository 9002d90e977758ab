package gatewaytest

import "net/http"

func (s *Server) fileRoutes(mux *http.ServeMux) {}
