-- Schema version 9: the responses of POST /responses that the gateway
-- answered itself (gateway.ResponseStore), per workspace, for
-- previous_response_id and GET /responses/{id}. response is the Response
-- object as answered, input the items the model was given (JSON arrays
-- and objects, as text); created_us is when it was made, in Unix
-- microseconds: log retention deletes those older than the request logs
-- it deletes.
CREATE TABLE responses (
	workspace_id TEXT NOT NULL,
	id           TEXT NOT NULL,
	created_us   BIGINT NOT NULL,
	response     TEXT NOT NULL,
	input        TEXT NOT NULL,
	PRIMARY KEY (workspace_id, id)
);
CREATE INDEX responses_created ON responses (created_us);
