"""Narrow-phase geometry of the contact model (:mod:`jaxdyn.contact`): signed distances, unit
normals and witness points between primitive shapes, each kind of pair evaluated for all its
pairs at once (batched array arithmetic, no Python per pair, no branch on data). A module per
family of shapes (:mod:`~jaxdyn.collision.segments` for points, spheres and segments,
:mod:`~jaxdyn.collision.boxes`, :mod:`~jaxdyn.collision.cylinders`,
:mod:`~jaxdyn.collision.ellipsoids`, :mod:`~jaxdyn.collision.hulls`); this package gathers their
functions, the interface :mod:`jaxdyn.contact` uses.

* sphere-sphere: the centre line (:func:`spheres`);
* capsules are spheres swept along a segment: closest points of a segment to a point and of two
  segments (Ericson05 5.1.2, 5.1.9; :func:`segment_point`, :func:`_segments`), the segment of a
  capsule geom (:func:`segment_of`);
* sphere-box: the closest point of the box, or the nearest face for a centre inside
  (:func:`sphere_box`); capsule-box: sphere-box at the segment's point deepest in the box,
  found exactly among 29 candidates (:func:`capsule_box`);
* the contacts of a pair: capsule-box as its two end spheres and its interior counted beyond
  the ends, (B1) (:func:`segment_box_contacts`); box-box as the corners of each box and the
  (B1) interior contacts of its edges against the other (:func:`box_box_contacts`);
  cylinder-box as the box's corners and the (B1) interior contacts of its edges against the
  cylinder, and the cylinder's rims against the box, four points on each and its deepest point
  (:func:`cylinder_box_contacts`, :func:`rim_points`); cylinder-cylinder as the rims
  of each against the other and the side line of the first facing the second
  (:func:`cylinder_cylinder_contacts`);
* a mesh's convex hull (outward triangles): its exact signed distance (:func:`hull_distance`:
  the faces' planes inside, the nearest triangle outside, Ericson05 5.1.5), against a sphere
  and a capsule as against a box, and against a box or a cylinder with its vertices and edges
  deepest in the other shape (:func:`box_hull_contacts`, :func:`cylinder_hull_contacts`);
* an ellipsoid: a point's closest point on it by Newton's method on the Lagrange multiplier
  (:func:`ellipsoid_closest`), so its exact signed distance against a sphere and, along a
  capsule's segment by golden section, against a capsule (:func:`segment_ellipsoid_contacts`),
  against a box with the box's corners and edges and its own support points along the
  faces' normals (:func:`ellipsoid_box_contacts`), and against a cylinder with the cylinder's
  rims and side line and its own support points along the disks' normals
  (:func:`ellipsoid_cylinder_contacts`), and against a mesh's hull with the hull's vertices and
  edges and its own support point deepest through the hull's faces
  (:func:`ellipsoid_hull_contacts`);
  two ellipsoids: the largest separation of their support functions over directions, by Newton's
  method on the sphere (:func:`ellipsoid_ellipsoid`), the distance apart and the minimum
  translation overlapping.

Every normalisation is guarded (a fallback direction where a length is zero), so the
derivatives are finite at coincident centres, parallel segments and points on a face or an
edge; the module docstring of :mod:`jaxdyn.contact.laws` states what is continuous.
"""

from __future__ import annotations

from .boxes import (  # noqa: F401
    CORNERS,
    EDGE_CORNERS,
    EDGE_DIRECTION,
    EDGE_START,
    FACE_AXIS,
    FACE_PAIRS,
    FACE_SIGN,
    box_box_contacts,
    box_edges,
    box_features,
    box_sdf,
    capsule_box,
    corner_index,
    segment_box_contacts,
    sphere_box,
)
from .cylinders import (  # noqa: F401
    RIM_GRID,
    cylinder_box_contacts,
    cylinder_cylinder_contacts,
    cylinder_rims,
    cylinder_sdf,
    cylinder_sdf_of,
    rim_points,
    rim_rows,
    rim_square,
    segment_cylinder,
    segment_cylinder_contacts,
    sphere_cylinder,
)
from .ellipsoids import (  # noqa: F401
    ELLIPSOID_STEPS,
    SUPPORT_STEPS,
    ellipsoid_box_contacts,
    ellipsoid_closest,
    ellipsoid_cylinder_contacts,
    ellipsoid_distance,
    ellipsoid_ellipsoid,
    ellipsoid_sdf_of,
    ellipsoid_support,
    segment_ellipsoid,
    segment_ellipsoid_contacts,
    sphere_ellipsoid,
)
from .hulls import (  # noqa: F401
    ELLIPSOID_CANDIDATES,
    FAR,
    HULL_POINTS,
    _deepest,
    box_hull_contacts,
    closest_on_triangles,
    cylinder_hull_contacts,
    edge_ellipsoid_estimate,
    ellipsoid_hull_contacts,
    face_normals,
    hull_distance,
    hull_hull_contacts,
    hull_sdf_of,
    segment_hull,
    segment_hull_contacts,
    sphere_hull,
    take,
    vertices_in_hull,
)
from .segments import (  # noqa: F401
    GOLDEN_STEPS,
    _segments,
    beyond_ends,
    dot,
    golden_minimum,
    length,
    segment_of,
    segment_params,
    segment_point,
    segment_segment_contacts,
    spheres,
    unit,
)
