"""A small agent on the real OpenAI client, traced by the real OpenInference
instrumentation and exported to Faultline over OTLP/HTTP (run by
test_openinference_instrumentation.py in a process of its own). The model is a local
stand-in at FAKE_OPENAI_URL: it asks for get_weather, then answers."""

from __future__ import annotations

import os

from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

QUESTION = "What is the weather in Oslo?"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]

provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
OpenAIInstrumentor().instrument(tracer_provider=provider)
tracer = provider.get_tracer("weather-agent")
client = OpenAI(base_url=os.environ["FAKE_OPENAI_URL"], api_key="not-a-real-key")

agent = {"openinference.span.kind": "AGENT", "input.value": QUESTION}
with tracer.start_as_current_span("weather agent", attributes=agent) as root:
    messages: list = [{"role": "user", "content": QUESTION}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    tool = {
        "openinference.span.kind": "TOOL",
        "tool.name": call.function.name,
        "tool.parameters": call.function.arguments,
        "output.value": "4 degrees, rain",
    }
    with tracer.start_as_current_span(call.function.name, attributes=tool):
        pass
    messages += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "4 degrees, rain"},
    ]
    second = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    print("trace", format(root.get_span_context().trace_id, "032x"))
    print("answer", second.choices[0].message.content)
provider.shutdown()
