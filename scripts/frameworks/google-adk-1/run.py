"""The support agent on Google's Agent Development Kit 1.x (the last 1.x release; an ``LlmAgent`` with
function tools, run by an ``InMemoryRunner``), OpenInference instrumentation of that era
(``GoogleADKInstrumentor`` 0.1.x). The same agent as ``scripts/frameworks/google-adk`` (ADK 2.x), in
``adk_support.py``, kept as its own framework because the two record the agent differently.

The model is ADK's own ``Gemini`` model class on the google-genai client, its ``base_url`` pointed at
the fake server's Gemini route (``generateContent``); no key leaves the machine. The instrumentation
records the agent run, each model call (LLM) and each tool (TOOL); ADK writes its own spans too
(``invoke_agent``, ``call_llm``, ``execute_tool``), and each model call's span holds the tools it
asked for.
"""

import adk_support

if __name__ == "__main__":
    adk_support.main("google-adk-1")
