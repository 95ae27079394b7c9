"""A project's slug is made of its name's words: markup tags in the name are no words."""

from __future__ import annotations

import pytest

from projects.services import MSG_BAD_NAME, ProjectError, project_create, project_slug


def test_it_drops_markup_tags_before_making_the_slug():
    assert project_slug("WebNav synthetic <b>trial</b> Ünï") == "webnav-synthetic-trial-uni"


def test_it_keeps_words_that_a_tag_separated():
    assert project_slug("line<br/>break") == "line-break"


def test_it_keeps_a_lone_angle_bracket_as_no_tag():
    assert project_slug("a < b > c") == "a-b-c"


@pytest.mark.django_db
def test_it_gives_a_new_project_the_slug_without_tag_letters(owner):
    project = project_create(name="WebNav synthetic <b>trial</b> Ünï", owner=owner)
    assert project.slug == "webnav-synthetic-trial-uni"
    assert project.name == "WebNav synthetic <b>trial</b> Ünï"  # the name is kept as typed


@pytest.mark.django_db
def test_it_refuses_a_name_that_is_only_tags(owner):
    with pytest.raises(ProjectError, match=MSG_BAD_NAME):
        project_create(name="<b></b>", owner=owner)
