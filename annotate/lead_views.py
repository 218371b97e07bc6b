"""Lead pages: project set-up, members, guidelines, claim boundaries, opening labelling.
(Placeholder views; the set-up pages replace them.)"""

from django.http import HttpResponse

from annotate.models import Role
from annotate.views import project_view


@project_view(Role.LEAD)
def project_setup(request, project, role):
    return HttpResponse(f"{project.name}: set-up")


project_new = members = guidelines = boundaries = project_upload = open_project = project_setup
boundary_edit = project_setup
