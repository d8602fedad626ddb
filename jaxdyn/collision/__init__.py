"""Narrow-phase geometry of the contact model (:mod:`jaxdyn.contact`): signed distances, unit
normals and witness points between primitive shapes, each kind of pair evaluated for all its
pairs at once (batched array arithmetic, no Python per pair, no branch on data). A module per
family of shapes (:mod:`~jaxdyn.collision.segments` for points, spheres and segments,
:mod:`~jaxdyn.collision.boxes`, :mod:`~jaxdyn.collision.cylinders`,
:mod:`~jaxdyn.collision.ellipsoids`, :mod:`~jaxdyn.collision.hulls`); this package gathers their
functions, the interface :mod:`jaxdyn.contact` uses.

* sphere-sphere: the centre line (:func:`_spheres`);
* capsules are spheres swept along a segment: closest points of a segment to a point and of two
  segments (Ericson05 5.1.2, 5.1.9; :func:`_segment_point`, :func:`_segments`), the segment of a
  capsule geom (:func:`_segment_of`);
* sphere-box: the closest point of the box, or the nearest face for a centre inside
  (:func:`_sphere_box`); capsule-box: sphere-box at the segment's point deepest in the box,
  found exactly among 29 candidates (:func:`_capsule_box`);
* the contacts of a pair: capsule-box as its two end spheres and its interior counted beyond
  the ends, (B1) (:func:`_segment_box_contacts`); box-box as the corners of each box and the
  (B1) interior contacts of its edges against the other (:func:`_box_box_contacts`);
  cylinder-box as the box's corners and the (B1) interior contacts of its edges against the
  cylinder, and the cylinder's rims against the box, four points on each and its deepest point
  (:func:`_cylinder_box_contacts`, :func:`_rim_points`); cylinder-cylinder as the rims
  of each against the other and the side line of the first facing the second
  (:func:`_cylinder_cylinder_contacts`);
* a mesh's convex hull (outward triangles): its exact signed distance (:func:`_hull_distance`:
  the faces' planes inside, the nearest triangle outside, Ericson05 5.1.5), against a sphere
  and a capsule as against a box, and against a box or a cylinder with its vertices and edges
  deepest in the other shape (:func:`_box_hull_contacts`, :func:`_cylinder_hull_contacts`);
* an ellipsoid: a point's closest point on it by Newton's method on the Lagrange multiplier
  (:func:`_ellipsoid_closest`), so its exact signed distance against a sphere and, along a
  capsule's segment by golden section, against a capsule (:func:`_segment_ellipsoid_contacts`),
  against a box with the box's corners and edges and its own support points along the
  faces' normals (:func:`_ellipsoid_box_contacts`), and against a cylinder with the cylinder's
  rims and side line and its own support points along the disks' normals
  (:func:`_ellipsoid_cylinder_contacts`), and against a mesh's hull with the hull's vertices and
  edges and its own support point deepest through the hull's faces
  (:func:`_ellipsoid_hull_contacts`);
  two ellipsoids: the largest separation of their support functions over directions, by Newton's
  method on the sphere (:func:`_ellipsoid_ellipsoid`), the distance apart and the minimum
  translation overlapping.

Every normalisation is guarded (a fallback direction where a length is zero), so the
derivatives are finite at coincident centres, parallel segments and points on a face or an
edge; the module docstring of :mod:`jaxdyn.contact.laws` states what is continuous.
"""

from __future__ import annotations

from .boxes import (  # noqa: F401
    _CORNERS,
    _EDGE_CORNERS,
    _EDGE_DIRECTION,
    _EDGE_START,
    _FACE_AXIS,
    _FACE_PAIRS,
    _FACE_SIGN,
    _box_box_contacts,
    _box_edges,
    _box_features,
    _box_sdf,
    _capsule_box,
    _corner_index,
    _segment_box_contacts,
    _sphere_box,
)
from .cylinders import (  # noqa: F401
    RIM_GRID,
    _cylinder_box_contacts,
    _cylinder_cylinder_contacts,
    _cylinder_rims,
    _cylinder_sdf,
    _cylinder_sdf_of,
    _rim_points,
    _rim_rows,
    _rim_square,
    _segment_cylinder,
    _segment_cylinder_contacts,
    _sphere_cylinder,
)
from .ellipsoids import (  # noqa: F401
    ELLIPSOID_STEPS,
    SUPPORT_STEPS,
    _ellipsoid_box_contacts,
    _ellipsoid_closest,
    _ellipsoid_cylinder_contacts,
    _ellipsoid_distance,
    _ellipsoid_ellipsoid,
    _ellipsoid_sdf_of,
    _ellipsoid_support,
    _segment_ellipsoid,
    _segment_ellipsoid_contacts,
    _sphere_ellipsoid,
)
from .hulls import (  # noqa: F401
    ELLIPSOID_CANDIDATES,
    FAR,
    HULL_POINTS,
    _box_hull_contacts,
    _closest_on_triangles,
    _cylinder_hull_contacts,
    _deepest,
    _edge_ellipsoid_estimate,
    _ellipsoid_hull_contacts,
    _face_normals,
    _hull_distance,
    _hull_hull_contacts,
    _hull_sdf_of,
    _segment_hull,
    _segment_hull_contacts,
    _sphere_hull,
    _take,
    _vertices_in_hull,
)
from .segments import (  # noqa: F401
    GOLDEN_STEPS,
    _beyond_ends,
    _dot,
    _golden_minimum,
    _length,
    _segment_of,
    _segment_params,
    _segment_point,
    _segment_segment_contacts,
    _segments,
    _spheres,
    _unit,
)
