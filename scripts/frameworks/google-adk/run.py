"""The support agent on Google's Agent Development Kit (an ``LlmAgent`` with function tools, run by an
``InMemoryRunner``), OpenInference instrumentation (``GoogleADKInstrumentor``).

The model is ADK's own ``Gemini`` model class on the google-genai client, its ``base_url`` pointed at
the fake server's Gemini route (``generateContent``); no key leaves the machine. The instrumentation
records the agent run, each model call (LLM) and each tool (TOOL); ADK writes its own spans too
(``invoke_agent``, ``call_llm``, ``execute_tool``), and a tool's span ends up inside the span of the
model call that asked for it. A tool that raises is answered to the model by the agent's
``on_tool_error_callback`` as ``{"error": "..."}``, as an ADK application does to let its agent go on.
"""

import adk_support

if __name__ == "__main__":
    adk_support.main("google-adk")
