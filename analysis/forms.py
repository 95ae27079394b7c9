from __future__ import annotations

from django import forms


class RenameForm(forms.Form):
    name = forms.CharField(max_length=300, required=False, label="Name")


class MergeForm(forms.Form):
    target = forms.TypedChoiceField(coerce=int, label="Merge into")
    # Set by the confirmation page's button: without it the merge is only described.
    confirm = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, choices=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["target"].choices = list(choices)


class CategoryMapForm(forms.Form):
    category = forms.TypedChoiceField(
        coerce=int, required=False, empty_value=None, label="Category"
    )

    def __init__(self, *args, choices=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["category"].choices = [("", "— none —"), *choices]


class CategoryCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    group = forms.CharField(max_length=100, required=False, initial="Custom")
    definition = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)


class RefreshForm(forms.Form):
    full = forms.BooleanField(required=False, label="Re-cluster from scratch")
