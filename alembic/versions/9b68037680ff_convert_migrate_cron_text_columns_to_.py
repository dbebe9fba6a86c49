"""convert migrate-cron text columns to utf8mb4

Revision ID: 9b68037680ff
Revises: fe6d79d1748b

"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mssql, mysql, postgresql

# revision identifiers, used by Alembic.
revision: str = '9b68037680ff'
down_revision: Union[str, Sequence[str], None] = 'fe6d79d1748b'
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    # Text columns state utf8mb4 and a binary collation on MySQL/MariaDB: a table created
    # on a latin1 server could not hold a job's output in CJK or with a check mark (error
    # 1366). Other databases store Unicode already: nothing to do there.
    dialect = op.get_context().dialect.name
    if dialect == 'mysql':
        op.execute(
            'ALTER TABLE job'
            " MODIFY state VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT 'open',"
            ' MODIFY locked_by VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,'
            ' MODIFY last_error TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,'
            ' MODIFY output TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,'
            ' DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin'
        )
        op.execute(
            'ALTER TABLE scheduled_runs'
            " MODIFY outcome VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT 'enqueued',"
            ' DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin'
        )
        op.execute(
            'ALTER TABLE job_leases'
            ' MODIFY holder VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,'
            ' DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin'
        )
        op.execute(
            'ALTER TABLE side_effects'
            ' MODIFY status VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,'
            ' MODIFY holder VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,'
            ' DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin'
        )
        op.execute(
            'ALTER TABLE job_attempts'
            ' MODIFY worker VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,'
            ' MODIFY outcome VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,'
            ' MODIFY error TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,'
            ' MODIFY output_tail TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,'
            ' DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin'
        )
    if dialect == 'mariadb':
        op.execute(
            'ALTER TABLE job'
            " MODIFY state VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL DEFAULT 'open',"
            ' MODIFY locked_by VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin,'
            ' MODIFY last_error TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin,'
            ' MODIFY output TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin,'
            ' DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin'
        )
        op.execute(
            'ALTER TABLE scheduled_runs'
            " MODIFY outcome VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL DEFAULT 'enqueued',"
            ' DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin'
        )
        op.execute(
            'ALTER TABLE job_leases'
            ' MODIFY holder VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,'
            ' DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin'
        )
        op.execute(
            'ALTER TABLE side_effects'
            ' MODIFY status VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,'
            ' MODIFY holder VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin,'
            ' DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin'
        )
        op.execute(
            'ALTER TABLE job_attempts'
            ' MODIFY worker VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,'
            ' MODIFY outcome VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,'
            ' MODIFY error TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin,'
            ' MODIFY output_tail TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin,'
            ' DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin'
        )


def downgrade() -> None:
    """Downgrade schema."""
    pass
