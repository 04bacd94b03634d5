"""A new user's own support agent, end to end through the command line (issue 23, "Tests that must
exist"): the agent on the real ``openai`` SDK and its twin on the real ``anthropic`` SDK, an order
service over HTTP, and local model servers that, like every real one, answer each request with fresh
ids. Nothing here is the bundled incident example."""
