"""The first program a Django user writes: a project with an app of two related models,
`migrate`, then ORM queries. Prints what it sees; the output must not depend on the server."""
import io, os, sys

# argv: host:port/dbname/user, and an empty directory for the project.
host_port, dbname, user = sys.argv[1].split("/")
host, port = host_port.split(":")
root = sys.argv[2]
app = os.path.join(root, "shop")
os.makedirs(os.path.join(app, "migrations"))
open(os.path.join(app, "__init__.py"), "w").close()
open(os.path.join(app, "migrations", "__init__.py"), "w").close()
with open(os.path.join(app, "models.py"), "w") as f:
    f.write('''
from django.db import models

class Author(models.Model):
    name = models.CharField(max_length=100, unique=True)
    born = models.DateField(null=True)

class Book(models.Model):
    title = models.CharField(max_length=200)
    author = models.ForeignKey(Author, on_delete=models.CASCADE, related_name="books")
    pages = models.IntegerField(default=0)
    price = models.DecimalField(max_digits=8, decimal_places=2, null=True)
    meta = models.JSONField(default=dict)

    class Meta:
        indexes = [models.Index(fields=["title"])]
''')
sys.path.insert(0, root)

import django
from django.conf import settings

settings.configure(
    DEBUG=False,
    USE_TZ=True,
    TIME_ZONE="UTC",
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "shop"],
    DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "NAME": dbname, "USER": user,
                           "HOST": host, "PORT": port}},
    DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
)
django.setup()
from django.core.management import call_command
from django.db import connection, transaction, IntegrityError

out = io.StringIO()
call_command("makemigrations", "shop", stdout=out, verbosity=0)
call_command("migrate", stdout=out, verbosity=1)
print("\n".join(l for l in out.getvalue().splitlines() if l.strip().startswith("Applying")))

from shop.models import Author, Book
from django.contrib.auth.models import User, Permission
from django.db.models import Count, Sum

ann = Author.objects.create(name="Ann")
bob = Author.objects.create(name="Bob")
Book.objects.create(title="First", author=ann, pages=100, meta={"color": "red", "tags": ["a", "b"], "n": 1.50})
Book.objects.create(title="Second", author=ann, pages=250, meta={"color": "blue", "tags": ["b"], "deep": {"x": None}})
Book.objects.create(title="Third", author=bob, pages=50)
print("authors", list(Author.objects.order_by("name").values_list("name", flat=True)))
print("ann's books", list(ann.books.order_by("title").values_list("title", "pages")))
print("per author", list(Author.objects.annotate(n=Count("books"), p=Sum("books__pages")).order_by("name").values_list("name", "n", "p")))
print("long", list(Book.objects.filter(pages__gt=60, author__name="Ann").order_by("-pages").values_list("title", flat=True)))
Book.objects.filter(title="Third").update(pages=55)
print("third", Book.objects.get(title="Third").pages)
# JSONField: key, index, contains, has_key and isnull lookups, and an update of the document.
print("meta", list(Book.objects.order_by("title").values_list("title", "meta")))
print("color red", list(Book.objects.filter(meta__color="red").values_list("title", flat=True)))
print("tag 0", list(Book.objects.filter(meta__tags__0="b").values_list("title", flat=True)))
print("contains", list(Book.objects.filter(meta__contains={"tags": ["b"]}).order_by("title").values_list("title", flat=True)))
print("contained", list(Book.objects.filter(meta__contained_by={"color": "red", "tags": ["a", "b"], "n": 1.50}).order_by("title").values_list("title", flat=True)))
print("has_key", list(Book.objects.filter(meta__has_key="deep").values_list("title", flat=True)))
print("has_any", list(Book.objects.filter(meta__has_any_keys=["n", "deep"]).order_by("title").values_list("title", flat=True)))
print("deep null", list(Book.objects.filter(meta__deep__x__isnull=False).values_list("title", flat=True)))
print("no color", list(Book.objects.filter(meta__color__isnull=True).values_list("title", flat=True)))
third = Book.objects.get(title="Third")
third.meta = {"color": "green", "a": [1, {"b": True}]}
third.save()
print("third meta", Book.objects.get(title="Third").meta, Book.objects.filter(meta__a__1__b=True).count())
try:
    with transaction.atomic():
        Author.objects.create(name="Ann")
except IntegrityError:
    print("duplicate author refused")
with transaction.atomic():
    Book.objects.create(title="Kept", author=bob)
    try:
        with transaction.atomic():
            Book.objects.create(title="Undone", author=bob)
            raise RuntimeError("undo")
    except RuntimeError:
        pass
print("bob's books", list(bob.books.order_by("title").values_list("title", flat=True)))
bob.delete()
print("books left", Book.objects.count())
print("permissions", Permission.objects.filter(content_type__app_label="shop").count())
u = User.objects.create_user("carol", password="secret")
print("user", User.objects.get(username="carol").check_password("secret"))
from django.utils import timezone
print("joined", User.objects.filter(date_joined__lte=timezone.now(), last_login__isnull=True).count())
print("tables", sorted(t for t in connection.introspection.table_names() if t.startswith(("shop_", "auth_user", "django_"))))
print("DJANGO DONE")
