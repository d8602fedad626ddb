#!/usr/bin/env bash
# Builds .gpu/ for `gpu_session.sh sim4` on a machine with pip and the scenes' packages
# (pip install --no-deps playground dm-control): the peers' cp312 wheels (MuJoCo, MJX and what
# they import that the GPU image lacks) and the scenes' XML without code or meshes. About 23 MB;
# .git/info/exclude should list /.gpu/ so that only `carry` sends it.
set -eu
cd "$(dirname "$0")/.."
rm -rf .gpu && mkdir -p .gpu/whl .gpu/site
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any -d .gpu/whl \
  mujoco==4.0.0 mujoco-core==4.0.0 mujoco-mjx==3.17.0 trimesh==5.2.0 glfw pyopengl
pkg() { python3 -c "import importlib.util, os; print(os.path.dirname(importlib.util.find_spec('$1').origin))"; }
P=$(pkg mujoco_playground) D=$(pkg dm_control)
S=.gpu/site
mkdir -p $S/mujoco_playground/_src/locomotion/go1 $S/mujoco_playground/_src/dm_control_suite/xmls $S/dm_control/suite
touch $S/mujoco_playground/__init__.py $S/dm_control/__init__.py
cp -r "$P/_src/locomotion/go1/xmls" $S/mujoco_playground/_src/locomotion/go1/
rm -f $S/mujoco_playground/_src/locomotion/go1/xmls/assets/*.stl $S/mujoco_playground/_src/locomotion/go1/xmls/assets/*.obj
cp -r "$P/_src/dm_control_suite/xmls/humanoid.xml" "$P/_src/dm_control_suite/xmls/common" \
  $S/mujoco_playground/_src/dm_control_suite/xmls/
cp -r "$D/suite/humanoid.xml" "$D/suite/common" $S/dm_control/suite/
du -sh .gpu
