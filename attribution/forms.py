from __future__ import annotations

from typing import Any

from django import forms

MSG_STEP_RANGE = "Choose a step between 0 and {last}."


class DecisiveStepForm(forms.Form):
    """A human label: the decisive step of a failed rollout, who made it and why."""

    step_index = forms.IntegerField(min_value=0, label="Decisive step")
    agent = forms.CharField(max_length=200, required=False, label="Agent")
    # Optional: a reason is a diagnosis, and the misbehaviours quote it, so none is better
    # than a made-up one (the keyboard's d saves a label without it).
    reason = forms.CharField(
        max_length=5000,
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Reason",
    )

    def __init__(self, *args: Any, step_count: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.step_count = step_count

    def clean_step_index(self) -> int:
        step = self.cleaned_data["step_index"]
        if step >= self.step_count:
            raise forms.ValidationError(MSG_STEP_RANGE.format(last=max(self.step_count - 1, 0)))
        return step
