from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


@login_required
def project_list(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/project_list.html", {"projects": request.user.projects.all()})
